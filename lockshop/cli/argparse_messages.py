"""argparse's own messages ("usage: ", "error:", "the following arguments are required"...),
listed so that ``./run catalog`` keeps them in the catalog: argparse marks them in
the standard library, where pybabel does not look. ``lockshop.cli.language`` hands
argparse the catalog; ``tests/test_i18n.py`` checks that this list still holds every
message of the running Python's argparse.
"""

from __future__ import annotations

from shop.i18n import N_, ngettext

# Python 3.11's argparse, in its order.
ARGPARSE_MESSAGES = (
    N_('usage: '),
    N_('argument %(argument_name)s: %(message)s'),
    N_('.__call__() not defined'),
    N_('conflicting subparser: %s'),
    N_('conflicting subparser alias: %s'),
    N_('unknown parser %(parser_name)r (choices: %(choices)s)'),
    N_('argument "-" with mode %r'),
    N_("can't open '%(filename)s': %(error)s"),
    N_('cannot merge actions - two groups are named %r'),
    N_("'required' is an invalid argument for positionals"),
    N_('invalid option string %(option)r: must start with a character %(prefix_chars)r'),
    N_('dest= is required for options like %r'),
    N_('invalid conflict_resolution value: %r'),
    ngettext('conflicting option string: %s', 'conflicting option strings: %s', 1),
    N_('mutually exclusive arguments must be optional'),
    N_('positional arguments'),
    N_('options'),
    N_('show this help message and exit'),
    N_('cannot have multiple subparser arguments'),
    N_('unrecognized arguments: %s'),
    N_('not allowed with argument %s'),
    N_('ignored explicit argument %r'),
    N_('ignored explicit argument %r'),
    N_('the following arguments are required: %s'),
    N_('one of the arguments %s is required'),
    N_('expected one argument'),
    N_('expected at most one argument'),
    N_('expected at least one argument'),
    ngettext('expected %s argument', 'expected %s arguments', 1),
    N_('ambiguous option: %(option)s could match %(matches)s'),
    N_('unexpected option string: %s'),
    N_('unrecognized arguments: %s'),
    N_('%r is not callable'),
    N_('invalid %(type)s value: %(value)r'),
    N_('invalid choice: %(value)r (choose from %(choices)s)'),
    N_('%(prog)s: error: %(message)s\n'),
)

"""The skeleton a student starts an exercise from, in the student's language.

The room asks for it through ``skeleton_source`` only, so that the skeletons'
translations (comments and TODOs in Chinese) change this one function and
nothing else: today it is the skeleton's file as ``lockshop exercise start``
writes it.
"""

from __future__ import annotations

from lockshop.exercises import Exercise


def skeleton_source(exercise: Exercise, tag: str) -> str:
    """``exercise``'s skeleton, its words in the language ``tag`` names where it has them."""
    del tag  # one skeleton per exercise until the translated ones arrive
    return exercise.skeleton.read_text(encoding="utf-8")

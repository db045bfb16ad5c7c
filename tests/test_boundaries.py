"""The house plan, held by the code's own imports (every import statement,
including those inside functions):

* ``locks`` stands alone: it never imports the shop, its tooling or the load tests;
* the served app (``shop``) never imports its tooling (``lockshop``) nor the load tests;
  an instance of ``lockshop up`` adds the console's page to it, and nothing else;
* the load tests talk to the shop over HTTP only;
* inside ``lockshop``, a part imports only the parts on the floors below its own
  (``LOCKSHOP_FLOORS``): no arrow runs up the house, or across one floor;
* no module imports itself back through others (no cycle).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("locks", "shop", "lockshop", "loadtest")

#: package -> the packages it must never import.
FORBIDDEN = {
    "locks": {"shop", "lockshop", "loadtest"},
    "shop": {"lockshop", "loadtest"},
    "loadtest": {"shop", "lockshop", "locks"},
}


#: lockshop's parts (its subpackages), from the top floor down. A part may import the
#: parts on the floors below its own, never one above nor one beside it on its floor.
#: The ground floor is lockshop's own modules (``table.py``, ``turns.py``, ``invoked.py``):
#: tools any part may use, that import no part.
LOCKSHOP_FLOORS = (
    ("lockshop.cli",),
    ("lockshop.console",),
    ("lockshop.room",),
    ("lockshop.exercises", "lockshop.bench", "lockshop.soak", "lockshop.compose"),
    ("lockshop.workshop",),
    ("lockshop.cluster",),
    ("lockshop",),
)


def module_paths() -> dict[str, Path]:
    modules = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def imports_of(module: str, path: Path, known: set[str]) -> set[str]:
    """The project's modules that ``module`` imports, anywhere in its file."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            # "from pkg import mod" imports the module pkg.mod; "from mod import name", mod.
            found.update(f"{base}.{a.name}" if f"{base}.{a.name}" in known else base
                         for a in node.names)
    return {name for name in found if name.split(".")[0] in PACKAGES}


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    modules = module_paths()
    return {name: imports_of(name, path, set(modules)) for name, path in modules.items()}


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_a_package_never_imports_what_it_must_not(graph, package):
    crossings = sorted(f"{module} imports {target}"
                       for module, targets in graph.items() if module.split(".")[0] == package
                       for target in targets if target.split(".")[0] in FORBIDDEN[package])
    assert crossings == []


def lockshop_part(module: str) -> str:
    """The part of lockshop a module belongs to: ``lockshop.room.api`` is
    ``lockshop.room``'s; ``lockshop.table``, a module of lockshop's own, is ``lockshop``'s."""
    first_two = module.split(".")[:2]
    return ".".join(first_two) if (ROOT.joinpath(*first_two)).is_dir() else "lockshop"


def arrows_not_down(graph: dict[str, set[str]]) -> list[str]:
    """Every import between two of lockshop's parts that does not go down a floor."""
    floor = {part: number for number, parts in enumerate(LOCKSHOP_FLOORS) for part in parts}
    return sorted(f"{module} imports {target}"
                  for module, targets in graph.items() if module.split(".")[0] == "lockshop"
                  for target in targets if target.split(".")[0] == "lockshop"
                  if lockshop_part(module) != lockshop_part(target)
                  and floor[lockshop_part(target)] <= floor[lockshop_part(module)])


def test_every_part_of_lockshop_has_its_floor(graph):
    parts = {lockshop_part(m) for m in graph if m.split(".")[0] == "lockshop"}
    assert parts == {part for floor in LOCKSHOP_FLOORS for part in floor}


def test_lockshop_s_parts_import_only_the_floors_below(graph):
    assert arrows_not_down(graph) == []


def test_an_arrow_up_or_across_a_floor_is_found():
    graph = {"lockshop.workshop.labs.measured": {"lockshop.bench.turns",  # up
                                                 "lockshop.cluster.client"},  # down: fine
             "lockshop.bench.harness": {"lockshop.soak.faults",  # across
                                        "lockshop.table", "lockshop.bench.output"}}
    assert arrows_not_down(graph) == [
        "lockshop.bench.harness imports lockshop.soak.faults",
        "lockshop.workshop.labs.measured imports lockshop.bench.turns"]


def test_the_served_app_is_all_under_shop(graph):
    """gunicorn's entry point, and everything it reaches, stays inside ``shop`` and ``locks``."""
    reached = reached_from(graph, "shop.wsgi")
    assert {m.split(".")[0] for m in reached} <= {"shop", "locks"}
    assert "shop.api" in reached and "shop.web.views" in reached  # the walk did walk


def test_an_instance_adds_the_console_s_page_and_no_other_tooling(graph):
    """What ``lockshop up``'s instances serve is the shop and the console's page: the
    launcher, the labs, the control and Locust stay out of a served process."""
    reached = reached_from(graph, "lockshop.console.instance")
    assert {m for m in reached if m.split(".")[0] not in ("shop", "locks")} == {
        "lockshop.console.instance", "lockshop.console.page"}
    assert "shop.wsgi" in reached  # the walk did walk


def test_a_holder_process_loads_no_exercise(graph):
    """A holder process (the labs' and the grader's, ``lockshop.cluster.holder``) loads a
    lock and holds it: the exercises' registry and checks (with the sale's launcher of
    shop instances) stay out of the dozens the grader starts. A module's packages run
    their ``__init__`` too, so they count as imported."""
    reached: set[str] = set()
    todo = {"lockshop.cluster.holder"}
    while todo:
        reached |= {m for start in todo for m in reached_from(graph, start)}
        todo = {".".join(m.split(".")[:depth]) for m in reached
                for depth in range(1, m.count(".") + 1)} - reached
    assert sorted(m for m in reached if m.startswith("lockshop.exercises")) == []
    assert "locks.custom" in reached and "lockshop.cluster.wire" in reached  # it did walk


def reached_from(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every module ``start`` imports, directly or through others, and itself."""
    reached, todo = set(), [start]
    while todo:
        module = todo.pop()
        if module not in reached:
            reached.add(module)
            todo.extend(graph.get(module, ()))
    return reached


def test_no_import_cycle(graph):
    cycle = find_cycle(graph)
    assert cycle is None, " -> ".join(cycle)


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path that ends where it starts, or None."""
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> list[str] | None:
        if node in path:
            return path[path.index(node):] + [node]
        if node in done:
            return None
        for target in sorted(graph.get(node, ())):
            if target != node and (cycle := visit(target, path + [node])):
                return cycle
        done.add(node)
        return None

    for start in sorted(graph):
        if cycle := visit(start, []):
            return cycle
    return None

"""``lockshop report``: every strategy through the same scenarios, one folder.

    report/
      report.md, report.html     one table per scenario, each row explained
      charts/oversold.png        what went wrong, per strategy
      charts/throughput.png      orders/s and p95 latency, per strategy
      results.json               every figure, raw
      runs/<scenario>/<run>/     Locust's own HTML report and CSV files

Written for someone who was not in the room: each row says what the strategy
is and why it passed or failed. In the language the command speaks (``--lang``,
LANG): the tables, the verdicts and the charts, which draw Chinese with a CJK
font (fonts-wqy-zenhei, which ./run installs).
"""

from __future__ import annotations

import json
import logging
import os
import platform
import sys
import time
from pathlib import Path

from jinja2 import Environment, PackageLoader, select_autoescape

from lockshop.workshop.runs import (
    FLASH_SALE,
    SEAT_SALE,
    RunResult,
    plan,
    run_sale,
    say,
    stage,
)
from shop import i18n
from shop.config import Config
from shop.i18n import _

SCENARIOS = {s.name: s for s in (FLASH_SALE, SEAT_SALE)}
#: Fonts with Chinese glyphs, tried after matplotlib's own (which has none), and where
#: Debian puts the first (fonts-wqy-zenhei): matplotlib's font list must name it.
CJK_FONTS = ("WenQuanYi Zen Hei", "Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans SC")
CJK_FONT_FILES = ("/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc",)

log = logging.getLogger(__name__)


def run_report(config: Config, *, output: Path, instances: int = 3, users: int = 24,
               run_time_s: int = 8, business_delay_ms: int = 20,
               strategies: list[str] | None = None, scenarios: list[str] | None = None,
               server_admin_url: str | None = None) -> int:
    chosen = [SCENARIOS[name] for name in scenarios] if scenarios else list(SCENARIOS.values())
    output.mkdir(parents=True, exist_ok=True)
    results: list[RunResult] = []
    started = time.time()
    with stage(config, output / "runtime", server_admin_url, instances) as (cluster, shop_strategies,
                                                                            config):
        runs = plan(shop_strategies, instances, strategies)
        total = len(runs) * len(chosen)
        for scenario in chosen:
            for number, run in enumerate(runs, start=1):
                label = f"{number:02d}-{run.strategy.name}-{run.instances}"
                say(_("[%(number)s/%(total)s] %(scenario)s: %(strategy)s on %(instances)s "
                      "instance(s)…", number=len(results) + 1, total=total,
                      scenario=scenario.title, strategy=run.strategy.name,
                      instances=run.instances))
                results.append(run_sale(cluster, config, scenario, run, users=users,
                                        run_time_s=run_time_s,
                                        business_delay_ms=business_delay_ms, html=True,
                                        folder=output / "runs" / scenario.name / label))
        database = shop_strategies.database
    rows = [_row(r, run_time_s, output) for r in results]
    settings = {"instances": instances, "users": users, "run_time_s": run_time_s,
                "business_delay_ms": business_delay_ms, "database": database,
                "started": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started)),
                "cpus": os.cpu_count(), "python": sys.version.split()[0],
                "platform": platform.platform()}
    (output / "results.json").write_text(json.dumps({"settings": settings, "rows": rows},
                                                    indent=2) + "\n")
    charts = _charts(rows, output / "charts")
    strategies_seen = {r.run.strategy.name: r.run.strategy for r in results}
    context = {"settings": settings, "scenarios": [(s, [r for r in rows if r["scenario"] == s.name])
                                                   for s in chosen],
               "charts": charts, "strategies": list(strategies_seen.values()),
               "surprises": [r for r in rows if not r["as_expected"]]}
    templates = Environment(loader=PackageLoader("lockshop.workshop", "templates"),
                            autoescape=select_autoescape(["html"]), trim_blocks=True,
                            lstrip_blocks=True, extensions=["jinja2.ext.i18n"])
    templates.install_gettext_callables(i18n.gettext, i18n.ngettext, newstyle=True)
    context["html_language"] = i18n.current_language().replace("_", "-")
    (output / "report.md").write_text(templates.get_template("report.md").render(context))
    (output / "report.html").write_text(templates.get_template("report.html").render(context))
    say(_("report written to %(html)s and %(markdown)s", html=output / "report.html",
          markdown=output / "report.md"))
    return 1 if context["surprises"] else 0


def _row(result: RunResult, run_time_s: int, output: Path) -> dict:
    totals = result.audit["totals"]
    strategy = result.run.strategy
    return {
        "scenario": result.scenario.name, "strategy": strategy.name, "family": strategy.family,
        "instances": result.run.instances, "sold_anything": result.sold_anything,
        "correct": result.correct,
        "expected_correct": result.run.expected_correct, "as_expected": result.as_expected,
        "why": _why(result), **{k: totals[k] for k in (
            "initial", "sold", "remaining", "orders", "oversold", "lost_updates",
            "double_booked_seats", "retries", "stale_writes_rejected")},
        "orders_per_s": round(totals["orders"] / run_time_s, 1),
        "requests_per_s": round(result.locust.requests_per_second, 1),
        "p50_ms": result.locust.p50_ms, "p95_ms": result.locust.p95_ms,
        "failed_requests": result.locust.failures, **result.lock,
        "overlaps": result.overlaps["overlaps"], "overlaps_both_wrote":
        result.overlaps["both_wrote"], "overlaps_complete": result.overlaps["complete"],
        "duplicate_job_runs": result.audit["jobs"]["duplicate_runs"],
        "locust_html": str((result.locust.csv_prefix.parent / "locust.html")
                           .relative_to(output)),
    }


def _why(result: RunResult) -> str:
    totals = result.audit["totals"]
    strategy = result.run.strategy
    if not result.sold_anything:
        return _("Nothing to judge: no order was placed in this run (Locust's report "
                 "says why).")
    if result.correct:
        costs = []
        if totals["retries"]:
            costs.append(_("%(count)s retries", count=totals["retries"]))
        if totals["stale_writes_rejected"]:
            costs.append(_("%(count)s stale writes rejected by fencing",
                           count=totals["stale_writes_rejected"]))
        if costs:
            return _("Correct: sold %(sold)s of %(initial)s, nothing oversold or "
                     "double-booked; it cost %(costs)s.", sold=totals["sold"],
                     initial=totals["initial"], costs=i18n.join(costs))
        return _("Correct: sold %(sold)s of %(initial)s, nothing oversold or double-booked.",
                 sold=totals["sold"], initial=totals["initial"])
    wrong = [text % {"count": totals[key]} for key, text in (
        ("oversold", _("%(count)s oversold")), ("lost_updates", _("%(count)s lost updates")),
        ("double_booked_seats", _("%(count)s double-booked seats"))) if totals[key]]
    reason = strategy.failure_mode or strategy.summary
    if strategy.correct_within_one_process and result.run.instances > 1:
        reason = _("each instance has its own in-process locks, so instances overlap.")
    return _("Wrong: %(what)s. Why: %(reason)s", what=i18n.join(wrong),
             reason=reason)


def _charts(rows: list[dict], folder: Path) -> dict[str, str]:
    import matplotlib
    matplotlib.use("Agg")  # files only, no screen
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    # WenQuanYi Zen Hei comes in one weight (medium): matplotlib says so at every lookup
    # of a normal-weight glyph, and uses it, as it should.
    font_log = logging.getLogger("matplotlib.font_manager")
    level = font_log.level
    font_log.setLevel(logging.ERROR)
    try:
        with plt.rc_context({"font.family": ["DejaVu Sans", *chinese_fonts()]}):
            return _draw_charts(plt, rows, folder)
    finally:
        font_log.setLevel(level)


def chinese_fonts() -> list[str]:
    """The fonts with Chinese glyphs that matplotlib can use, registering Debian's first:
    its cache may have been built before the font was installed."""
    from matplotlib import font_manager

    known = {font.name for font in font_manager.fontManager.ttflist}
    for path in CJK_FONT_FILES:
        if not known & set(CJK_FONTS) and Path(path).is_file():
            font_manager.fontManager.addfont(path)
            known = {font.name for font in font_manager.fontManager.ttflist}
    found = [name for name in CJK_FONTS if name in known]
    if not found and i18n.current_language() != i18n.ENGLISH:
        log.warning("no font with Chinese glyphs (apt-get install fonts-wqy-zenhei): "
                    "the charts' Chinese will show as boxes")
    return found


def _draw_charts(plt, rows: list[dict], folder: Path) -> dict[str, str]:
    labels = [f"{r['strategy']}×{r['instances']}\n{SCENARIOS[r['scenario']].title}"
              if r["scenario"] in SCENARIOS else f"{r['strategy']}×{r['instances']}"
              for r in rows]
    colours = ["#2e7d32" if r["correct"] else "#c62828" for r in rows]
    width = max(8, 0.7 * len(rows))

    figure, axis = plt.subplots(figsize=(width, 4.5))
    bad = [r["oversold"] + r["double_booked_seats"] for r in rows]
    axis.bar(range(len(rows)), bad, color=colours)
    axis.set_title(_("Oversold units + double-booked seats (0 is correct)"))
    axis.set_xticks(range(len(rows)), labels, fontsize=8)
    axis.set_ylabel(_("from the audit"))
    figure.tight_layout()
    figure.savefig(folder / "oversold.png", dpi=110)
    plt.close(figure)

    figure, axis = plt.subplots(figsize=(width, 4.5))
    axis.bar(range(len(rows)), [r["orders_per_s"] for r in rows], color=colours)
    axis.set_ylabel(_("orders/s (bars)"))
    axis.set_xticks(range(len(rows)), labels, fontsize=8)
    latency = axis.twinx()
    latency.plot(range(len(rows)), [r["p95_ms"] for r in rows], "o-", color="#1d232a")
    latency.set_ylabel(_("p95 latency, ms (line)"))
    axis.set_title(_("Throughput and p95 latency (red: the audit was not correct)"))
    figure.tight_layout()
    figure.savefig(folder / "throughput.png", dpi=110)
    plt.close(figure)
    return {"oversold": "charts/oversold.png", "throughput": "charts/throughput.png"}

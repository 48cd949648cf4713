"""Rewrites the generated blocks of ``docs/performance.md`` from one run's records.

A block sits between ``<!-- bench:NAME -->`` and ``<!-- /bench:NAME -->``. Only the
blocks this run has data for are replaced; the text around them is left alone.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import tables

__all__ = ["main", "render_blocks", "replace_block", "update_docs"]

Record = dict[str, Any]


def replace_block(text: str, name: str, body: str) -> str:
    pattern = re.compile(
        rf"(<!-- bench:{re.escape(name)} -->\n).*?(<!-- /bench:{re.escape(name)} -->)", re.S
    )
    if not pattern.search(text):
        raise KeyError(f"docs have no block {name!r}")
    return pattern.sub(lambda m: m.group(1) + body.rstrip("\n") + "\n" + m.group(2), text)


def _meta_block(meta: dict[str, Any], records: list[Record]) -> str:
    m = meta["machine"]
    versions = {
        r["target"]: r["target_info"].get("version") for r in records if r.get("target_info")
    }
    stamps = sorted(str(r["time"]) for r in records if r.get("time"))
    when = f"{stamps[0]} to {stamps[-1][11:]}" if stamps else time.strftime("%Y-%m-%dT%H:%M")
    lines = [
        f"- Run: `{meta['command']}`, {when} (local time)",
        f"- Machine: {m['cpu']}, {m['cores']} cores, Linux {m['kernel']}, Python {m['python']}"
        + (f" (`{m['python_prefix']}`)" if m.get("python_prefix") else ""),
    ]
    etcd = next((v for k, v in versions.items() if k.startswith("etcd") and v), None)
    if etcd:
        lines.append(f"- etcd {etcd} (Debian `etcd-server`)")
    return "\n".join(lines) + "\n"


def render_blocks(records: list[Record], meta: dict[str, Any]) -> dict[str, str]:
    """Block name → Markdown, for every block these records can fill."""
    blocks: dict[str, str] = {}
    by_section: dict[str, list[Record]] = {}
    for record in records:
        by_section.setdefault(record.get("section", ""), []).append(record)
    suite = meta["suite"]
    blocks[f"run-{suite}"] = _meta_block(meta, records)
    renderers: dict[str, Callable[[list[Record]], str]] = {
        "baselines": tables.measurements,
        "single": tables.measurements,
        "cluster": tables.measurements,
        "perfpass": tables.perfpass,
        "nodes": tables.nodes,
        "secrets": tables.secrets,
        "profile": tables.profiles,
    }
    for section, rows in by_section.items():
        if section in renderers:
            blocks[section] = renderers[section](rows)
    if suite != "perfpass" and "perfpass" in by_section:
        # The before/after table has its own run line: it says when it was measured.
        blocks["run-perfpass"] = _meta_block(meta, by_section["perfpass"])
    if suite == "standard":
        blocks["ratios"] = tables.ratios(records)
        blocks["goals"] = tables.goals(records)
        blocks["headline"] = tables.headline(records)
        blocks["commands"] = tables.commands(records)
    return blocks


#: Blocks repeated in the README, so its headline figures come from the same run.
README_BLOCKS = ("headline",)


def update_docs(
    path: Path, records: list[Record], meta: dict[str, Any], readme: Path | None = None
) -> None:
    text = path.read_text()
    blocks = render_blocks(records, meta)
    for name, body in blocks.items():
        if name.startswith("run-") and f"<!-- bench:{name} -->" not in text:
            continue  # a suite run on its own (perfpass, quick) has no run block
        text = replace_block(text, name, body)
    path.write_text(text)
    print(f"updated {path}")
    if readme is None or not readme.exists():
        return
    original = readme.read_text()
    updated = original
    for name in README_BLOCKS:
        if name in blocks and f"<!-- bench:{name} -->" in updated:
            updated = replace_block(updated, name, blocks[name])
    if updated != original:
        readme.write_text(updated)
        print(f"updated {readme}")


def main(argv: list[str] | None = None) -> int:
    """Re-render the docs from saved results, without measuring again."""
    import argparse
    import json

    parser = argparse.ArgumentParser(prog="bench.report")
    parser.add_argument("--suite", required=True)
    parser.add_argument("--results", required=True, help="a JSON-lines file from bench.run")
    parser.add_argument("--docs", default="docs/performance.md")
    parser.add_argument("--readme", default="README.md")
    args = parser.parse_args(argv)
    records: list[Record] = []
    meta: dict[str, Any] | None = None
    with open(args.results) as handle:
        for line in handle:
            record = json.loads(line)
            if "meta" in record:
                meta = record["meta"]
            else:
                records.append(record)
    if meta is None:
        from bench.run import machine

        command = f"python -m bench.run --suite {args.suite} --out {args.results} --update-docs"
        meta = {"suite": args.suite, "machine": machine(), "command": command}
    update_docs(Path(args.docs), records, meta, Path(args.readme))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The ecosystem check: jaxcheck on real user-written JAX code, every finding judged by a person.

    ../shared/corpus/fetch-ecosystem.sh .ecosystem && ../shared/corpus/fetch.sh .corpus
    ../shared/corpus/fetch-notebooks.sh .notebooks
    python bench/ecosystem.py                 # compare with the committed baseline
    python bench/ecosystem.py --update        # write the baseline: keep verdicts, add new findings unjudged
    python bench/ecosystem.py --only notebooks  # one corpus (the others' findings are left alone)

Each project folder of the three corpora (the third holds Jupyter notebooks, whose findings are keyed
by cell: `path:cell N:line:column:CODE`) is checked on its own (as its maintainers would run it), with
every rule (`--select ALL` by default). Findings are compared with `bench/ecosystem_baseline.json`, in
which every finding carries a verdict, `true` (a real bug), `intended` (what the rule describes, done on
purpose) or `false` (a false alarm), and a one-line reason judged by reading the code. The script
prints new and vanished findings and precision per rule ((true + intended) / judged), and exits 1 when a
finding has no verdict or a finding changed, so every change to the model lands with its baseline.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # measure this checkout, not an installed copy

from jaxcheck.analyzer.config import Configuration
from jaxcheck.analyzer.engine import Linter
from jaxcheck.analyzer.output.context import read_notebook_indexes
from jaxcheck.analyzer.registry import all_rules

BASELINE = Path(__file__).with_name("ecosystem_baseline.json")
VERDICTS = ("true", "intended", "false")


@dataclass(frozen=True, order=True)
class Finding:
    """One finding, identified by where it is (the corpora are pinned, so positions are stable)."""

    path: str
    cell: int
    """The notebook cell `line` is in (0 in a Python file)."""
    line: int
    column: int
    code: str
    message: str

    @property
    def key(self) -> str:
        cell = f"cell {self.cell}:" if self.cell else ""
        return f"{self.path}:{cell}{self.line}:{self.column}:{self.code}"


def project_folders(corpora: list[Path]) -> list[Path]:
    """Every project folder of the corpora that exist (a corpus is a folder of project folders)."""
    folders: list[Path] = []
    for corpus in corpora:
        if corpus.is_dir():
            folders += sorted(p for p in corpus.iterdir() if p.is_dir())
        else:
            print(f"note: {corpus} is missing; fetch it first (see this script's docstring)", file=sys.stderr)
    return folders


def run(folders: list[Path], select: list[str], jobs: int) -> tuple[list[Finding], list[str]]:
    """Check each project folder on its own; the findings (paths relative to the corpora's parent) and errors."""
    linter = Linter(Configuration(), select=select)
    findings: list[Finding] = []
    errors: list[str] = []
    for folder in folders:
        report = linter.check_paths([folder], jobs=jobs)
        base = folder.parent.parent
        errors += [str(error) for error in report.errors]
        notebooks = read_notebook_indexes(d.path for d in report.diagnostics)
        for d in report.diagnostics:
            path = Path(d.path).resolve().relative_to(base.resolve()).as_posix()
            index = notebooks.get(d.path)
            place = index.place(d.range.start) if index is not None else None
            line, column = (place.line, place.column) if place is not None else (d.range.start.line, d.range.start.column)
            findings.append(Finding(path, (place.cell or 0) if place is not None else 0, line, column + 1, d.code, d.message))
    return sorted(findings), errors


def load_baseline(path: Path) -> dict[str, dict[str, str | None]]:
    if not path.exists():
        return {}
    entries = json.loads(path.read_text(encoding="utf-8"))
    return {entry["key"]: entry for entry in entries}


def write_baseline(path: Path, findings: list[Finding], baseline: dict[str, dict[str, str | None]],
                   kept: tuple[str, ...] = ()) -> None:
    """Write `findings` with the verdicts `baseline` has for them; the file's entries under the corpus
    folders `kept` (not checked this run) stay as they are, each corpus's entries together."""
    entries = [entry for entry in json.loads(path.read_text(encoding="utf-8")) if entry["key"].startswith(kept)] \
        if kept and path.exists() else []
    for finding in findings:
        old = baseline.get(finding.key, {})
        entries.append({
            "key": finding.key,
            "message": finding.message,
            "verdict": old.get("verdict"),
            "reason": old.get("reason"),
        })
    entries.sort(key=lambda entry: str(entry["key"]).split("/", 1)[0])  # stable: each corpus keeps its order
    path.write_text(json.dumps(entries, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def precision_table(findings: list[Finding], baseline: dict[str, dict[str, str | None]]) -> list[str]:
    """Per rule: findings, verdict counts, precision ((true + intended) / judged) and the share of real bugs."""
    names = {rule.code: rule.name for rule in all_rules()}
    counts: dict[str, Counter[str]] = {}
    for finding in findings:
        verdict = baseline.get(finding.key, {}).get("verdict") or "unjudged"
        counts.setdefault(finding.code, Counter())[verdict] += 1
    rows = [f"{'rule':<8} {'name':<32} {'findings':>8} {'true':>5} {'intended':>8} {'false':>5} "
            f"{'unjudged':>8} {'precision':>9} {'bugs':>6}"]
    total: Counter[str] = Counter()
    for code in sorted(counts):
        total.update(counts[code])
        rows.append(_row(code, names.get(code, ""), counts[code]))
    rows.append(_row("all", "", total))
    return rows


def _row(code: str, name: str, count: Counter[str]) -> str:
    judged = count["true"] + count["intended"] + count["false"]
    findings = judged + count["unjudged"]
    precision = f"{(count['true'] + count['intended']) / judged:.0%}" if judged else "-"
    bugs = f"{count['true'] / judged:.0%}" if judged else "-"
    return (f"{code:<8} {name:<32} {findings:>8} {count['true']:>5} {count['intended']:>8} {count['false']:>5} "
            f"{count['unjudged']:>8} {precision:>9} {bugs:>6}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ecosystem", type=Path, default=Path(".ecosystem"), help="fetch-ecosystem.sh's folder")
    parser.add_argument("--corpus", type=Path, default=Path(".corpus"), help="fetch.sh's folder (jax, flax, ...)")
    parser.add_argument("--notebooks", type=Path, default=Path(".notebooks"), help="fetch-notebooks.sh's folder")
    parser.add_argument("--only", choices=("ecosystem", "corpus", "notebooks"), action="append",
                        help="check only this corpus (repeatable); the baseline's other entries are kept as they are")
    parser.add_argument("--baseline", type=Path, default=BASELINE)
    parser.add_argument("--select", default="ALL", help="rules to run, comma-separated (default: every rule)")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--update", action="store_true", help="write the baseline (verdicts kept, new ones empty)")
    args = parser.parse_args()

    select = [code.strip() for code in args.select.split(",")]
    if select == ["ALL"]:
        select = [rule.code for rule in all_rules()]
    corpora = [folder for name, folder in (("ecosystem", args.ecosystem), ("corpus", args.corpus),
                                           ("notebooks", args.notebooks)) if not args.only or name in args.only]
    findings, errors = run(project_folders(corpora), select, args.jobs)
    baseline = load_baseline(args.baseline)
    current = {finding.key for finding in findings}
    new = [f for f in findings if f.key not in baseline]
    ran = tuple(f"{corpus.name}/" for corpus in corpora)
    vanished = sorted(key for key in baseline if key.startswith(ran) and key not in current)
    for error in errors:
        print(f"error: {error}")
    for finding in new:
        print(f"new: {finding.key}: {finding.message}")
    for key in vanished:
        entry = baseline[key]
        print(f"vanished: {key} (was {entry.get('verdict') or 'unjudged'}: {entry.get('reason') or ''})")
    for corpus in corpora:
        part = [f for f in findings if f.path.startswith(f"{corpus.name}/")]
        print(f"\n{corpus.name}: {len(part)} findings")
        print("\n".join(precision_table(part, baseline)))
    print("\nall corpora checked:")
    print("\n".join(precision_table(findings, baseline)))
    if args.update:
        others = tuple(f"{folder.name}/" for folder in (args.ecosystem, args.corpus, args.notebooks)
                       if folder not in corpora)
        write_baseline(args.baseline, findings, baseline, others)
        print(f"wrote {args.baseline} ({len(findings)} findings)")
    unjudged = [f for f in findings if (baseline.get(f.key) or {}).get("verdict") not in VERDICTS]
    if unjudged:
        print(f"FAIL: {len(unjudged)} findings without a verdict in {args.baseline}")
    if new or vanished:
        print(f"FAIL: {len(new)} new and {len(vanished)} vanished findings against {args.baseline}")
    return 1 if unjudged or new or vanished or errors else 0


if __name__ == "__main__":
    sys.exit(main())

"""``ragjudge fit-judges``: refit the offline judges' parameters on your own human labels.

The labels file format is documented in ``ragjudge.judges.offline.fit`` and docs/judges.md
(one labelled item per row: ``dimension``, ``question``, ``answer``, ``contexts``,
``reference``, ``claim``, ``label``, ``group``); a filled ``ragjudge spot-check`` sheet is one.
The new parameters are written as a versioned JSON file; point the judges at it with
``RAGJUDGE_OFFLINE_PARAMS=<file>`` (or the judges' ``params`` option).
"""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    """Add ``fit-judges`` to the app."""

    @app.command("fit-judges")
    def fit_judges(
        labels: Path = typer.Option(..., "--labels", help="Labels file (JSONL or CSV)."),
        out: Path = typer.Option(..., "--out", help="Where to write the parameters (JSON)."),
        version: str = typer.Option(
            "", "--version", help="Version name of the new parameters (default: custom-<file>)."
        ),
        base: Path | None = typer.Option(
            None, "--base", help="Parameters to start from (default: the bundled ones)."
        ),
    ) -> None:
        """Refit the offline judges on human labels (cross-validated logistic regression,
        shrunk towards the base parameters)."""
        from rich.console import Console
        from rich.table import Table

        from ragjudge.judges.offline.fit import read_labels, refit
        from ragjudge.judges.offline.params import load_params

        blank: list[int] = []
        rows = read_labels(labels, blank=blank)
        if blank:
            Console(stderr=True).print(
                f"[yellow]{labels}: {len(blank)} rows with a blank label skipped "
                f"(first at line {blank[0]})[/]"
            )
        params = refit(
            rows,
            version=version or f"custom-{labels.stem}",
            base=load_params(base),
            description=f"refitted on {labels.name} ({len(rows)} rows)",
            provenance={"labels": str(labels), "rows": len(rows)},
        )
        params.save(out)
        table = Table(title=f"offline judge parameters {params.version} -> {out}")
        cols = ("model", "fitted", "n", "CV log loss (prior)", "CV AUROC", "CV accuracy", "lambda")
        for col in cols:
            table.add_column(col)
        fitted = set(params.provenance.get("fitted_models", []))
        for name, model in params.models.items():
            cv = model.cv if name in fitted else {}
            table.add_row(
                name,
                "yes" if name in fitted else "kept",
                f"{cv['n']:.0f}" if cv else "",
                f"{cv['log_loss']:.3f} ({cv['prior_log_loss']:.3f})" if cv else "",
                f"{cv['auroc']:.3f}" if cv else "",
                f"{cv['accuracy']:.3f}" if cv else "",
                f"{cv['lambda']:g}" if cv else "",
            )
        Console().print(table)
        if not fitted:
            Console(stderr=True).print(
                "[yellow]no model was refitted: each needs labels of both classes[/]"
            )

"""A board's content without times: two runs that did the same have equal fingerprints."""

from __future__ import annotations

from d2_notebook.board import Board

# Times differ between runs, and the model_calls rows honestly name the replay model.
VOLATILE = {"created_at", "updated_at", "time", "duration_s", "latency_s", "model"}


def fingerprint(board: Board) -> dict[str, list]:
    """Everything on a board except times and durations."""

    def clean(record: dict) -> dict:
        return {k: (clean(v) if isinstance(v, dict) else v) for k, v in record.items()
                if k not in VOLATILE}

    return {
        "hypotheses": [clean(h.to_dict()) for h in board.list_hypotheses()],
        "evidence": [clean(e.to_dict()) for e in board.list_evidence()],
        "links": [clean(link.to_dict()) for link in board.list_links()],
        "verdicts": [clean(v.to_dict()) for v in board.list_verdicts()],
        "calls": [(c.agent, c.status.value, c.request, c.response)
                  for c in board.list_model_calls(refused=True)],
        "events": [(e.seq, e.actor, e.kind, clean(e.payload)) for e in board.events()],
    }

"""Many writers at once (threads and asyncio tasks), and a second process reading."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from pathlib import Path

import pandas as pd

from d2_notebook.board import Board

WRITERS = 8
ROWS_PER_WRITER = 500

READER = r"""
import json, sys, time
from pathlib import Path
from d2_notebook.board import Board

path, done = sys.argv[1], Path(sys.argv[2])
reads, partial, last_seq, problems = 0, 0, 0, []
with Board.open(path) as board:
    while True:
        finished = done.exists()
        seq = board.last_seq()
        if seq < last_seq:
            problems.append(f"seq went back from {last_seq} to {seq}")
        batch = board.events(since=last_seq)
        if [e.seq for e in batch] != list(range(last_seq + 1, last_seq + 1 + len(batch))):
            problems.append("events out of order or with gaps")
        last_seq = batch[-1].seq if batch else last_seq
        n = board.counts()["evidence"]
        partial += 0 < n < int(sys.argv[3])
        reads += 1
        if finished:
            break
        time.sleep(0.005)
print(json.dumps({"reads": reads, "partial": partial, "last_seq": last_seq,
                  "problems": problems}))
"""


def _write(board: Board, writer: int) -> None:
    hyp = f"H{writer + 1}"
    for i in range(ROWS_PER_WRITER):
        ev = board.add_evidence(f"SELECT {writer} AS w, {i} AS i",
                                pd.DataFrame({"w": [writer], "i": [i]}),
                                description=f"writer {writer} row {i}", author=f"w{writer}")
        board.link(ev.id, hyp, "supports", f"w{writer}", actor=f"w{writer}")


async def _write_async(board: Board, writer: int) -> None:
    hyp = f"H{writer + 1}"
    for i in range(ROWS_PER_WRITER):
        ev = board.add_evidence(f"SELECT {writer} AS w, {i} AS i",
                                pd.DataFrame({"w": [writer], "i": [i]}),
                                description=f"writer {writer} row {i}", author=f"w{writer}")
        await asyncio.sleep(0)
        board.link(ev.id, hyp, "supports", f"w{writer}", actor=f"w{writer}")
        await asyncio.sleep(0)


def test_eight_writers_and_a_reading_process(board_path: Path, tmp_path: Path):
    board = Board.open(board_path)
    for writer in range(WRITERS):
        board.add_hypothesis(f"writer {writer}")
    done = tmp_path / "done"
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(board_path), str(done),
         str(WRITERS * ROWS_PER_WRITER)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    threads = [threading.Thread(target=_write, args=(board, w)) for w in range(WRITERS // 2)]
    for thread in threads:
        thread.start()

    async def tasks() -> None:
        await asyncio.gather(*(_write_async(board, w) for w in range(WRITERS // 2, WRITERS)))

    asyncio.run(tasks())
    for thread in threads:
        thread.join()
    done.touch()
    out, err = reader.communicate(timeout=120)
    assert reader.returncode == 0, err
    report = json.loads(out)

    total = WRITERS * ROWS_PER_WRITER
    evidence = board.list_evidence()
    assert [e.id for e in evidence] == [f"E{n}" for n in range(1, total + 1)]
    links = board.list_links()
    assert len(links) == total
    for writer in range(WRITERS):
        mine = [link for link in links if link.hypothesis_id == f"H{writer + 1}"]
        assert len(mine) == ROWS_PER_WRITER
        rows = [board.get_evidence(link.evidence_id).description for link in mine]
        assert rows == [f"writer {writer} row {i}" for i in range(ROWS_PER_WRITER)]
    events = board.events()
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert len(events) == WRITERS + 2 * total
    assert board.evidence_frame("E4000").shape == (1, 2)

    assert report["problems"] == []
    assert report["last_seq"] == len(events)
    assert report["partial"] > 0, "the reader never saw the board while it was written"
    board.close()

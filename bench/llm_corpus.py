"""Conversations written by llm's own logging with its offline echo model, for side-by-side benchmarks.

    python bench/llm_corpus.py OUT_DIR N1,N2,...   (needs the bench extra: llm, llm-echo)

Writes OUT_DIR/logs-N.db for each N (the same first N conversations: each file is a copy taken when the
log reached N). Each conversation has 10 prompts and 10 echo responses (20 turns); a common word
("refund") is in half the conversations, a rare one ("zanzibar") in 1 of 40; the rest is drawn from a
small vocabulary. Writing goes through `Response.log_to_db`, as `llm prompt` logs.
"""

import os
import random
import shutil
import sys

import llm
import sqlite_utils
from llm.migrations import migrate

WORDS = ("order invoice shipping delay customer account password reset billing card charge plan upgrade"
         " cancel support ticket status update email phone address delivery package return label").split()


def main(out, sizes):
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "logs.db")
    if os.path.exists(path):
        os.unlink(path)
    db = sqlite_utils.Database(path)
    migrate(db)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=OFF")  # a benchmark corpus: built fast, read the same way as any log
    model = llm.get_model("echo")
    rnd = random.Random(7)
    for i in range(max(sizes)):
        conversation = model.conversation()
        common, rare = i % 2 == 0, i % 40 == 3
        for j in range(10):
            text = " ".join(rnd.choice(WORDS) for _ in range(12))
            if j == 4 and common:
                text += " refund"
            if j == 7 and rare:
                text += " zanzibar"
            response = conversation.prompt(text)
            response.text()
            response.log_to_db(db)
        if i + 1 in sizes:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            shutil.copyfile(path, os.path.join(out, f"logs-{i + 1}.db"))
            print(f"{i + 1} conversations", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sorted(int(n) for n in sys.argv[2].split(",")))

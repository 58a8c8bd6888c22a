"""The WordCount input of the hadoop workload: generated text whose word frequencies follow
Zipf's law (stdlib only, so a node runs it where the corpus is written, a VM guest among them)::

    python3 -m vnetbench.workloads.hadoop.corpus PATH BYTES
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

WORDS = ("the", "of", "and", "a", "to", "in", "hadoop", "namespace", "bridge", "vxlan",
         "wireguard", "packet", "latency", "block", "replica", "shuffle", "reduce", "mapper",
         "cluster", "switch", "route", "socket", "kernel", "tunnel", "overlay", "throughput")
VOCABULARY = 50000
"""Distinct words of the generated corpus (a novel has some 10-20 thousand)."""


def write_corpus(path: Path, size: int, seed: int = 1) -> None:
    """``size`` bytes of text lines (deterministic) whose word frequencies follow Zipf's
    law, as natural text's do: the word of rank r appears in proportion to 1/r (the study
    counted words in Project Gutenberg books; this is generated, not a real text)."""
    rng = random.Random(seed)
    vocab = list(WORDS) + [f"w{i}" for i in range(VOCABULARY - len(WORDS))]
    weights = [1.0 / rank for rank in range(1, len(vocab) + 1)]
    chunks = []
    for _ in range(8):
        words = rng.choices(vocab, weights=weights, k=20000)
        lines = [" ".join(words[i:i + 12]) for i in range(0, len(words), 12)]
        chunks.append(("\n".join(lines) + "\n").encode())
    path.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    with open(path, "wb") as f:
        i = 0
        while written < size:
            chunk = chunks[i % len(chunks)][: size - written]
            f.write(chunk)
            written += len(chunk)
            i += 1


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not argv[1].isdigit():
        print("usage: python3 -m vnetbench.workloads.hadoop.corpus PATH BYTES", file=sys.stderr)
        return 2
    write_corpus(Path(argv[0]), int(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

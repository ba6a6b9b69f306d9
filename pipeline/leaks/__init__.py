"""Leak detection, split by job (the Stage classes live in :mod:`pipeline.stages.leaks`).

* :mod:`pipeline.leaks.text`: diff/patch text as normalised lines, containment, post-image blocks;
* :mod:`pipeline.leaks.rules`: which solution-leak kind a simple command attempts (per-program rules);
* :mod:`pipeline.leaks.confirm`: whether the attempt's observation delivered the fix;
* :mod:`pipeline.leaks.writes`: what the run later wrote itself (edits, ``sed -i``, ``cat > f``, patches);
* :mod:`pipeline.leaks.solution`: one run through both steps;
* :mod:`pipeline.leaks.ngrams`: word tokens, their hashes and n-gram hashes (numba), Bloom filter and hash set;
* :mod:`pipeline.leaks.scan`: one compiled pass over a batch's run texts (statement n-grams, candidate lines);
* :mod:`pipeline.leaks.benchmark`: the benchmark index (cached by content) and one detector per benchmark-leak reason.

The shell lexer and wrapper peeler they use is :mod:`pipeline.text.shell` (shared with ``convert``).
"""

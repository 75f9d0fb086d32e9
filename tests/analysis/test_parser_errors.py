"""Bad data files are refused with the package's ParseError (file, line, what to fix), never a raw exception or a
plausible number; read_coref stays linear however deeply mentions nest, and its head words match a scan of the
documented rule on random trees."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from attnwidgets.analysis import ParseError, read_conllu
from attnwidgets.analysis.coref import read_coref
from attnwidgets.analysis.coref_files import _Heads, _rule_head


def row(i, form="w", head=0, rel="dep", misc="_", id_=None, upos="NOUN") -> str:
    return "\t".join([str(i if id_ is None else id_), form, "_", upos, "_", "_", str(head), rel, "_", misc])


def write(tmp_path, name: str, data: str | bytes):
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return path


ANN_LEFT = [row(1, "Ann", 2, "nsubj"), row(2, "left", 0, "root")]


# -- CoNLL-U for dependency scoring --------------------------------------------------------------------------------

@pytest.mark.parametrize("lines, line, message", [
    (["# sent_id = a", row(1, "Ann", 2, id_="x"), ANN_LEFT[1]], 2, r"ID 'x' is not a word id.*fix the ID column"),
    ([row(1, "Ann", "two"), ANN_LEFT[1]], 1, r"HEAD 'two' is not a word id.*fix the HEAD column"),
    ([row(1, "Ann", -1), ANN_LEFT[1]], 1, r"HEAD '-1' is not a word id"),
    ([ANN_LEFT[0], ANN_LEFT[1], row(3, "now", 9)], 3, r"HEAD 9 of word 3 points past .* which has 3 words"),
    (["1-x\tdidn't" + "\t_" * 8, *ANN_LEFT], 1, r"ID '1-x' is not a word id"),
    (["2-3\tdidn't" + "\t_" * 8, *ANN_LEFT], 1, r"multiword token '2-3' must cover the next words, 1-N"),
    ([ANN_LEFT[0], row(3, "left", 0)], 2, r"word ids must run 1, 2, 3.*got 3 where 2 was next"),
    (["1\tAnn\t_"], 1, r"3 tab-separated columns, expected 10"),
])
def test_bad_conllu_lines_name_file_and_line(tmp_path, lines, line, message):
    path = write(tmp_path, "bad.conllu", "\n".join(lines) + "\n")
    with pytest.raises(ParseError, match=message) as info:
        read_conllu(path)
    assert str(info.value).startswith(f"{path}, line {line}: ")
    assert info.value.line == line and info.value.source == str(path)
    assert isinstance(info.value, ValueError)  # callers that caught ValueError still do


def test_head_cycles_are_refused_with_the_sentence_id(tmp_path):
    text = "# sent_id = s7\n" + "\n".join([row(1, "Ann", 2), row(2, "left", 3), row(3, "now", 2), row(4, ".", 0)])
    with pytest.raises(ParseError, match=r"line 3: sentence 's7': the HEADs of words 2 -> 3 -> 2 form a cycle"):
        read_conllu(write(tmp_path, "cycle.conllu", text + "\n"))
    with pytest.raises(ParseError, match=r"line 1: .*HEADs of words 1 -> 1 form a cycle"):  # a word its own head
        read_conllu([row(1, "Ann", 1), row(2, "left", 0)])


def test_head_past_the_sentence_is_refused_before_scoring():
    """It used to raise IndexError deep in the scoring; now the reader names the sentence and the line."""
    with pytest.raises(ParseError, match=r"CoNLL-U lines, line 1: HEAD 5 of word 1 points past the sentence "
                                         r"starting at line 1, which has 2 words"):
        read_conllu([row(1, "Ann", 5), row(2, "left", 0)])


def test_binary_and_misencoded_files(tmp_path):
    png = write(tmp_path, "image.conllu", b"\x89PNG\r\n\x1a\n\x00\x00\xff")
    with pytest.raises(ParseError, match=r"image.conllu, line 1: byte 0x89 is not UTF-8 text.*CoNLL-U file"):
        read_conllu(png)
    with pytest.raises(ParseError, match=r"image.conllu, line 1: byte 0x89 is not UTF-8 text.*coreference file"):
        read_coref(png)
    latin1 = write(tmp_path, "latin1.conllu", ("\n".join([*ANN_LEFT, "", row(1, "Café", 0, "root")]) + "\n")
                   .encode("latin-1"))
    with pytest.raises(ParseError, match=r"latin1.conllu, line 4: byte 0xe9 is not UTF-8"):
        read_conllu(latin1)
    with pytest.raises(ParseError, match=r"line 2: this line is not UTF-8 text"):  # a file opened in binary mode
        read_conllu([ANN_LEFT[0].encode(), b"2\tl\xe9ft\t_\tNOUN\t_\t_\t0\troot\t_\t_"])
    with pytest.raises(FileNotFoundError, match="no CoNLL-U file at"):
        read_conllu(tmp_path / "missing.conllu")


def test_a_good_file_still_reads(tmp_path):
    (s,) = read_conllu(write(tmp_path, "ok.conllu", "\ufeff# sent_id = 1\n" + "\n".join(ANN_LEFT) + "\n"))
    assert s.words == ["Ann", "left"] and s.heads.tolist() == [1, -1] and s.sent_id == "1"


# -- coreference files ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, line, message", [
    ("\n".join([row(1, "Ann", "x", misc="Entity=(e1-p-1)"), row(2, "she", 0, misc="Entity=(e1-p-1)")]), 1,
     "HEAD 'x' is not a word id"),
    ("# sent_id = c1\n" + "\n".join([row(1, "Ann", 2, misc="Entity=(e1-p-1)"), row(2, "she", 1, misc="Entity=(e1)")]),
     2, r"sentence 'c1': the HEADs of words 1 -> 2 -> 1 form a cycle"),
    ("\n".join([row(1, "Ann", 7, misc="Entity=(e1-p-1)"), row(2, "she", 0, misc="Entity=(e1)")]), 1,
     "HEAD 7 of word 1 points past"),
    (row(1, "Ann", 0, misc="Entity=(e1-p-1"), 1, "mention of 'e1' opened here is never closed.*close it with"),
    (row(1, "Ann", 0, misc="Entity=e1)"), 1, r"Entity bracket 'e1\)' closes 'e1', which is not open"),
    (row(1, "Ann", 0, misc="Entity=(e1-p-1))"), 1, "malformed Entity="),
    (row(1, "Ann", 0, misc="Entity=(e1-p-1)", id_="1.x"), 1, "ID '1.x' is not a word id"),
    ("#begin document (t); part 000\nt 0 0 Hi UH * - - - - * ((1)\n#end document", 2, "malformed coreference"),
    ("#begin document (t); part 000\nt 0 0 Hi UH * - - - - * 2)\n#end document", 2, r"bracket '2\)' closes '2'"),
    ("#begin document (t); part 000\nt 0\n#end document", 2, "2 columns; a CoNLL-2012 token line holds"),
    ("#begin document (t); part 000\n#begin document (u); part 000\n", 2, "#begin document before"),
])
def test_bad_coref_files_name_file_and_line(tmp_path, text, line, message):
    path = write(tmp_path, "bad.coref", text + "\n")
    with pytest.raises(ParseError, match=message) as info:
        read_coref(path)
    assert str(info.value).startswith(f"{path}, line {line}: ")


def test_coref_errors_without_a_line_still_name_the_file(tmp_path):
    path = write(tmp_path, "plain.conllu", "\n".join(ANN_LEFT) + "\n")
    with pytest.raises(ParseError, match=rf"^{path}: this CoNLL-U file has no coreference annotation"):
        read_coref(path)
    with pytest.raises(ParseError, match=r"^coreference text: this CoNLL-U file has no coreference"):
        read_coref("\n".join(ANN_LEFT) + "\n")


# -- nesting -------------------------------------------------------------------------------------------------------

def nested(n: int) -> str:
    """One sentence of n words, word k heading word k+1 (word 1 the root), with mention k spanning words k..n: n
    mentions nested in one another, each headed by its first word (the one closest to the root)."""
    rows = ["# newdoc id = deep", "# sent_id = s1"]
    for k in range(1, n + 1):
        misc = f"Entity=(e{k}-x-1" + ("".join(f"e{j})" for j in range(n, 0, -1)) if k == n else "")
        rows.append(row(k, f"w{k}", k - 1, "root" if k == 1 else "dep", misc))
    return "\n".join(rows) + "\n\n"


def test_100000_nested_mentions_read_in_seconds(tmp_path):
    """Before: 2,000 nested mentions took seconds and grew faster than their square; 100,000 did not finish."""
    path = write(tmp_path, "deep.conllu", nested(100_000))
    script = textwrap.dedent(f"""
        import time
        from attnwidgets.analysis.coref import read_coref
        t = time.perf_counter()
        (doc,) = read_coref({str(path)!r})
        took = time.perf_counter() - t
        ms = doc.mentions
        assert len(ms) == 100_000, len(ms)
        assert all(m.head == m.start and m.end == 99_999 for m in ms)
        assert len(ms[0].words) == 100_000 and list(ms[-1].words) == [99_999]
        print(f"{{took:.1f}}")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    print("read 100,000 nested mentions in", done.stdout.strip(), "s")


def test_deep_brackets_on_one_word_are_no_recursion():
    misc = "Entity=" + "(e1-p-1" * 50_000 + "(e2-p-1)" + "e1)" * 50_000
    (doc,) = read_coref(row(1, "Ann", 0, misc=misc) + "\n")
    assert [(m.entity, m.start, m.end) for m in doc.mentions] == [("e1", 0, 0), ("e2", 0, 0)]
    with pytest.raises(ParseError, match=r"malformed Entity='\(\(\(\(.*\.\.\. at character 1"):
        read_coref(row(1, "Ann", 0, misc="Entity=" + "(" * 100_000) + "\n")


def _scan_head(words, heads, rels):
    """The documented rule by a scan: among the words whose head lies outside the mention, punctuation skipped unless
    all of them are, the one closest to the root, then the leftmost."""
    depth = []
    for w in range(len(heads)):
        d, j = 0, w
        while heads[j] >= 0:
            j, d = heads[j], d + 1
        depth.append(d)
    inside = set(words)
    tops = [w for w in words if heads[w] not in inside]
    plain = [w for w in tops if rels[w] != "punct"] or tops
    return min(plain, key=lambda w: (depth[w], w))


@pytest.mark.parametrize("seed", range(5))
def test_heads_match_a_scan_on_random_trees(seed):
    """Random trees (punctuation as leaves, as UD has it), random nested and crossing spans."""
    rng = np.random.default_rng(seed)
    n = 60
    order = rng.permutation(n)
    heads = [-1] * n
    rels = ["dep"] * n
    for k in range(1, n):  # attach each word to an earlier one in a random order: a tree
        heads[order[k]] = int(order[rng.integers(0, k)])
    leaves = [w for w in range(n) if w not in heads]
    for w in rng.choice(leaves, size=len(leaves) // 2, replace=False):
        rels[w] = "punct"
    spans = [(int(a), int(a + rng.integers(0, n - a))) for a in rng.integers(0, n, size=300)]
    tags = ["_"] * n
    got = _Heads(heads, rels, tags).by_dependencies(spans)
    assert got == [_scan_head(list(range(a, b + 1)), heads, rels) for a, b in spans]


@pytest.mark.parametrize("seed", range(5))
def test_rule_heads_match_a_scan(seed):
    rng = np.random.default_rng(seed)
    n = 80
    tags = list(rng.choice(["DT", "NN", "NNS", "IN", "VBD", "JJ", ",", "PRP", "-", "NOUN", "ADP", "_"], size=n))
    finder = _Heads([-1] * n, ["dep"] * n, tags)
    for a in rng.integers(0, n, size=300):
        b = int(a + rng.integers(0, n - a))
        assert finder.by_rule(int(a), b) == _rule_head(list(range(a, b + 1)), tags), (a, b)


# -- text handed to the runner -------------------------------------------------------------------------------------

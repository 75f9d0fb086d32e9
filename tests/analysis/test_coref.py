"""Coreference probing (Clark et al. 2019 §5): reading CorefUD and CoNLL-2012, mention heads, segments, baselines
computed by hand, crafted attention, bad input, and the study end to end on a tiny BERT and the bundled model."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import attnwidgets as aw
from attnwidgets.analysis.coref import coref_segments, read_coref, score_coref
from attnwidgets.data import coref_sample_path
from attnwidgets.result import AttentionResult


def conllu(*sentences: str, newdoc: str | None = "d") -> str:
    """CoNLL-U text from sentences written as lines of 'form UPOS head deprel [feats] [Entity]' (space-separated)."""
    out = [f"# newdoc id = {newdoc}"] if newdoc else []
    for sentence in sentences:
        rows = [r.split() for r in sentence.strip().splitlines()]
        for i, r in enumerate(rows, 1):
            form, upos, head, rel = r[:4]
            feats = next((x for x in r[4:] if "=" in x and not x.startswith(("(", "Entity"))), "_")
            ent = next((x for x in r[4:] if x.startswith("(") or x.endswith(")")), None)
            out.append("\t".join([str(i), form, "_", upos, "_", feats, head, rel, "_",
                                  f"Entity={ent}" if ent else "_"]))
        out.append("")
    return "\n".join(out) + "\n"


# "Ann met Bob. She thanked him." with genders, so the sieves can tell She from him
ANN_BOB = conllu("""
Ann PROPN 2 nsubj Gender=Fem|Number=Sing (e1-person-1)
met VERB 0 root
Bob PROPN 2 obj Gender=Masc|Number=Sing (e2-person-1)
. PUNCT 2 punct
""", """
She PRON 2 nsubj (e1-person-1)
thanked VERB 0 root
him PRON 2 obj (e2-person-1)
. PUNCT 2 punct
""")

# "The dog barked. A cat hissed. The dog ran."
DOGS = conllu("""
The DET 2 det (e1-animal-2
dog NOUN 3 nsubj e1)
barked VERB 0 root
. PUNCT 3 punct
""", """
A DET 2 det (e2-animal-2
cat NOUN 3 nsubj e2)
hissed VERB 0 root
. PUNCT 3 punct
""", """
The DET 2 det (e1-animal-2
dog NOUN 3 nsubj e1)
ran VERB 0 root
. PUNCT 3 punct
""")


def word_result(segment, peaks: dict[int, int] | None = None, n_heads: int = 1) -> AttentionResult:
    """A result over [CLS] + the segment's words (one piece each) + [SEP]; head 0 sends word q to word peaks[q]
    (0.9 of its row), every other row and head is uniform."""
    words = segment.sentence.words
    n = len(words) + 2
    a = np.full((1, n_heads, n, n), 1.0 / n, np.float32)
    for q, k in (peaks or {}).items():
        a[0, 0, q + 1] = 0.1 / (n - 1)
        a[0, 0, q + 1, k + 1] = 0.9
        a[0, 0, q + 1] /= a[0, 0, q + 1].sum()
    special = np.zeros(n, bool)
    special[[0, -1]] = True
    return AttentionResult.from_arrays(a, ["[CLS]", *[w.lower() for w in words], "[SEP]"], special_mask=special)


# -- baselines by hand ---------------------------------------------------------------------------------------------


def test_baselines_by_hand_pronouns():
    seg = coref_segments(read_coref(ANN_BOB))[0]
    # words: Ann 0, met 1, Bob 2, . 3, She 4, thanked 5, him 6, . 7; scored: She (antecedent Ann), him (Bob)
    s = score_coref([word_result(seg, {4: 0, 6: 4})], [seg])  # She -> Ann (right), him -> She (wrong)
    assert [m["mention"] for m in s.mentions] == ["She", "him"]
    assert s.correct[0, 0].tolist() == [True, False]
    # nearest: She -> Bob (wrong), him -> She (wrong); same head: no match anywhere, so nearest again
    assert s.baselines["nearest"].tolist() == [False, False]
    assert s.baselines["same_head"].tolist() == [False, False]
    # sieves 1-2 find nothing; sieve 3 (gender): She agrees with Ann only, him with Bob only
    assert s.baselines["rules"].tolist() == [True, True]
    assert s.accuracy.tolist() == [[0.5]]
    assert [m["kind"] for m in s.mentions] == ["pronoun", "pronoun"]


def test_baselines_by_hand_same_head():
    seg = coref_segments(read_coref(DOGS), singletons=True)[0]  # "A cat", mentioned once, stays a candidate
    # words: The 0 dog 1 barked 2 . 3 A 4 cat 5 hissed 6 . 7 The 8 dog 9 ran 10 . 11; scored: the second "The dog"
    s = score_coref([word_result(seg, {9: 5})], [seg])  # the head sends dog -> cat: wrong
    assert [m["mention"] for m in s.mentions] == ["The dog"]
    assert s.baselines["nearest"].tolist() == [False]  # nearest is "A cat"
    assert s.baselines["same_head"].tolist() == [True]  # the earlier "dog"
    assert s.baselines["rules"].tolist() == [True]  # sieve 1: the same text "the dog"
    assert s.correct[0, 0].tolist() == [False]
    t = s.summary()
    assert t.loc["same head word", "all"] == 1.0 and t.loc["nearest mention", "all"] == 0.0
    assert t.loc["mentions", "nominal"] == 1.0


def test_crafted_head_is_perfect_on_the_sample():
    """One head sends each mention's head word to its nearest antecedent's head word: 100 %; a uniform head picks
    the first word (ties go to the lowest index), right exactly for the mentions whose antecedent heads hold it."""
    docs = read_coref(coref_sample_path())
    segs = coref_segments(docs, max_tokens=512)
    results, expect_uniform = [], []
    for seg in segs:
        peaks = {}
        for i, m in enumerate(seg.mentions):
            ante = [a.head for a in seg.mentions[:i] if a.entity == m.entity and a.head != m.head]
            if ante:
                peaks[m.head] = ante[-1]
                expect_uniform.append((1 if m.head == 0 else 0) in ante)
        results.append(word_result(seg, peaks, n_heads=2))
    s = score_coref(results, segs)
    assert s.n_mentions == len(expect_uniform) > 30
    assert s.accuracy[0, 0] == 1.0
    assert s.correct[0, 1].tolist() == expect_uniform
    assert s.best_heads(1)["label"].tolist() == ["1-1"]


# -- reading -------------------------------------------------------------------------------------------------------


def to_conll2012(path) -> str:
    """The CorefUD sample rewritten as CoNLL-2012 (UPOS as the POS column, brackets as numbers)."""
    import re

    out, doc, ids = [], None, {}
    for line in open(path, encoding="utf-8").read().splitlines():
        if line.startswith("# newdoc id"):
            if doc is not None:
                out += ["#end document"]
            doc = line.split("=")[1].strip()
            out += [f"#begin document ({doc}); part 000"]
            ids = {}
        elif not line.strip():
            out.append("")
        elif not line.startswith("#"):
            c = line.split("\t")
            ent = next((x[7:] for x in c[9].split("|") if x.startswith("Entity=")), "")

            found = re.findall(r"\((e\d+)[^()]*\)|\((e\d+)[^()]*|(e\d+)\)", ent)
            num = {e: str(ids.setdefault(e, len(ids) + 1)) for m in found for e in m if e}
            parts = [f"({num[m[0]]})" if m[0] else f"({num[m[1]]}" if m[1] else f"{num[m[2]]})" for m in found]
            out.append(" ".join([doc, "0", str(int(c[0]) - 1), c[1], c[3], "*", "-", "-", "-", "-", "*",
                                 "|".join(parts) or "-"]))
    return "\n".join([*out, "#end document"]) + "\n"


def test_both_formats_read_the_same_mentions():
    ud = read_coref(coref_sample_path())
    conll = read_coref(to_conll2012(coref_sample_path()))
    assert [d.doc_id.split("/")[0] for d in conll] == [d.doc_id for d in ud]
    same_heads = total = 0
    for a, b in zip(ud, conll):
        assert a.words == b.words
        assert [(m.start, m.end) for m in a.mentions] == [(m.start, m.end) for m in b.mentions]
        # the same partition into entities (ids differ: e1 vs 1)
        def partition(doc):
            return {frozenset((m.start, m.end) for m in doc.mentions if m.entity == e)
                    for e in {m.entity for m in doc.mentions}}

        assert partition(a) == partition(b)
        same_heads += sum(x.head == y.head for x, y in zip(a.mentions, b.mentions))
        total += len(a.mentions)
    # heads: dependencies in CorefUD, the documented POS rule in CoNLL-2012; they differ only where UD heads a name
    # by its first word ("Maria Lopez") and the rule by its last noun
    assert total == 80 and same_heads >= total - 5


def test_sample_heads_and_nesting():
    doc = read_coref(coref_sample_path())[0]
    w = doc.words
    got = [(" ".join(w[i] for i in m.words), w[m.head], m.entity) for m in doc.mentions[:5]]
    assert got == [("The committee", "committee", "e1"), ("the new law", "law", "e2"), ("Critics", "Critics", "e3"),
                   ("its", "its", "e2"), ("its rules", "rules", "e4")]  # "its" nested in "its rules", both read


def test_rule_heads_without_dependencies():
    text = "\n".join([
        "#begin document (t); part 000",
        "t 0 0 The DT * - - - - * (1", "t 0 1 president NN * - - - - * -", "t 0 2 of IN * - - - - * -",
        "t 0 3 the DT * - - - - * (2", "t 0 4 company NN * - - - - * 1)|2)", "t 0 5 spoke VBD * - - - - * -",
        "", "t 0 0 She PRP * - - - - * (1)", "t 0 1 left VBD * - - - - * -", "t 0 2 -LRB- -LRB- * - - - - * -",
        "t 0 3 /. . * - - - - * -", "#end document", ""])
    doc = read_coref(text)[0]
    assert doc.sentences[1].text == "She left ( ."
    assert [(m.entity, doc.words[m.head]) for m in doc.mentions] == [("1", "president"), ("2", "company"),
                                                                     ("1", "She")]


def test_crossing_and_discontinuous_mentions():
    text = conllu("""
Ann PROPN 4 nsubj (e1-person-1(e2-x-1
and CCONJ 3 cc
Bob PROPN 1 conj e1)
met VERB 0 root e2)
""", """
the DET 2 det (e3[1/2]-x-2
man NOUN 4 nsubj e3[1/2])
quickly ADV 4 advmod
left VERB 0 root (e3[2/2]-x-1)
""")
    doc = read_coref(text)[0]
    spans = [(m.entity, m.start, m.end, tuple(m.words), doc.words[m.head]) for m in doc.mentions]
    assert ("e1", 0, 2, (0, 1, 2), "Ann") in spans and ("e2", 0, 3, (0, 1, 2, 3), "met") in spans
    # a discontinuous mention: one mention over its parts (the gap "quickly" is not one of its words)
    assert ("e3", 4, 7, (4, 5, 7), "left") in spans


def test_spanning_sentences_dropped_with_a_warning():
    text = conllu("""
Ann PROPN 0 root (e1-person-1)
""", """
She PRON 0 root (e1-person-1)(e2-x-1
""", """
left VERB 0 root e2)
""")
    with pytest.warns(UserWarning, match="1 mention.*spanning sentences"):
        doc = read_coref(text)[0]
    assert [m.entity for m in doc.mentions] == ["e1", "e1"] and doc.dropped == 1


def test_singletons_are_candidates_only_when_asked():
    text = conllu("""
Ann PROPN 2 nsubj (e1-person-1)
met VERB 0 root
Bob PROPN 2 obj (e2-person-1)
""", """
She PRON 2 nsubj (e1-person-1)
left VERB 0 root
""")
    docs = read_coref(text)
    paper = coref_segments(docs)[0]  # Bob is mentioned once: no candidate, as in the paper's data
    assert [m.entity for m in paper.mentions] == ["e1", "e1"]
    assert score_coref([word_result(paper)], [paper]).baselines["nearest"].tolist() == [True]  # She -> Ann
    kept = coref_segments(docs, singletons=True)[0]
    assert [m.entity for m in kept.mentions] == ["e1", "e2", "e1"]
    assert score_coref([word_result(kept)], [kept]).baselines["nearest"].tolist() == [False]  # She -> Bob


def test_singletons_only_is_a_clear_error():
    text = conllu("""
Ann PROPN 2 nsubj (e1-person-1)
met VERB 0 root
Bob PROPN 2 obj (e2-person-1)
""")
    segs = coref_segments(read_coref(text))
    with pytest.raises(ValueError, match=r"no mention has an antecedent.*singletons"):
        score_coref([word_result(segs[0])], segs)


@pytest.mark.parametrize("text, message", [
    (conllu("Ann PROPN 0 root _"), "no coreference annotation.*Entity="),
    ("#begin document (t); part 000\nt 0 0 Hi UH * - - - - * -\n#end document\n", "no coreference annotation"),
    (conllu("Ann PROPN 0 root (e1-person-1"), "opened here is never closed"),
    (conllu("Ann PROPN 0 root e1)"), "closes 'e1', which is not open"),
    (conllu("Ann PROPN 0 root (e1-p-1))"), "malformed Entity="),
    (conllu("Ann PROPN 0 root (e1-p-1)junk"), "malformed Entity="),
    ("#begin document (t); part 000\nt 0 0 Hi UH * - - - - * (1\n#end document\n", "never closed"),
    ("#begin document (t); part 000\nt 0 0 Hi UH * - - - - * ((1)\n#end document\n", "malformed coreference"),
    ("#begin document (t); part 000\nt 0 0 Hi UH * - - - - * 2)\n#end document\n", "closes '2'"),
    ("#begin document (t); part 000\nt 0 0 Hi UH * - - - - * (1)\n", "no #end document"),
    (conllu("Ann PROPN 0 root (e1[1/2]-p-1)"), "lacks its last part"),
])
def test_malformed_files_are_clear_errors(text, message):
    with pytest.raises(ValueError, match=message):
        read_coref(text)


def test_missing_file():
    with pytest.raises(FileNotFoundError, match="no coreference file"):
        read_coref("/no/such/file.conllu")


def test_segments_keep_antecedents_inside():
    docs = read_coref(ANN_BOB)
    segs = coref_segments(docs, max_tokens=6)  # 4 words a sentence + 2 specials: one sentence per segment
    assert [s.text for s in segs] == ["Ann met Bob .", "She thanked him ."]
    with pytest.raises(ValueError, match="no mention has an antecedent"):  # the antecedents are in segment 0
        score_coref([word_result(s) for s in segs], segs)
    assert len(coref_segments(docs, max_tokens=6, window="truncate")) == 1
    assert len(coref_segments(docs, max_tokens=6, window="document")) == 1
    with pytest.raises(ValueError, match="window must be"):
        coref_segments(docs, window="nope")  # type: ignore[arg-type]


def test_truncated_words_are_not_scored():
    seg = coref_segments(read_coref(ANN_BOB))[0]
    r = word_result(seg)
    # keep only [CLS] Ann met Bob . She [SEP]: "him" was cut, so only "She" is scored
    cut = AttentionResult.from_arrays(np.full((1, 1, 7, 7), 1 / 7, np.float32), [*r.tokens[:6], "[SEP]"],
                                      special_mask=np.array([1, 0, 0, 0, 0, 0, 1], bool))
    s = score_coref([cut], [seg])
    assert [m["mention"] for m in s.mentions] == ["She"]


# -- the study end to end ------------------------------------------------------------------------------------------


def test_views_of_the_scores():
    seg = coref_segments(read_coref(DOGS), singletons=True)[0]  # "A cat", mentioned once, stays a candidate
    s = score_coref([word_result(seg, {9: 1}, n_heads=3)], [seg])
    g = aw.HeadStatsGrid.from_coref(s)
    assert g.statistic == "antecedent_selection" and (g.layer, g.head) == (0, 0)
    assert g.values("antecedent_selection").tolist() == [[1.0, 0.0, 0.0]]
    assert "same head 1.00" in g._meta["title"]
    fig = aw.plots.plot_coref(s, theme="lecture")
    assert "baselines: nearest 0.00" in fig.axes[0].get_title()
    with pytest.raises(TypeError, match="CorefScores"):
        aw.HeadStatsGrid.from_coref({"x": 1})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        aw.plots.plot_coref(s, selected=False)


# -- definitions a reader can choose (issue 23 §4) -----------------------------------------------------------------

# "Ann 's dog barked . She smiled ." -- "Ann" (e1) and "Ann 's dog" (e2) start at the same word
ANN_DOG = conllu("""
Ann PROPN 3 nmod:poss Gender=Fem|Number=Sing (e1-person-1)(e2-animal-3
's PART 1 case
dog NOUN 4 nsubj Number=Sing e2)
barked VERB 0 root
. PUNCT 4 punct
""", """
She PRON 2 nsubj (e1-person-1)
smiled VERB 0 root
. PUNCT 2 punct
""")


def test_same_head_fallback_counts_by_hand():
    """Ann met Bob . He left . -- "He" has no earlier same-head mention; the nearest mention (Bob) is right."""
    text = conllu("""
Ann PROPN 2 nsubj (e1-person-1)
met VERB 0 root
Bob PROPN 2 obj (e2-person-1)
. PUNCT 2 punct
""", """
Bob PROPN 2 nsubj (e2-person-1)
left VERB 0 root
. PUNCT 2 punct
""", """
He PRON 2 nsubj (e2-person-1)
left VERB 0 root
. PUNCT 2 punct
""")
    seg = coref_segments(read_coref(text), singletons=True)[0]
    # words: Ann 0 met 1 Bob 2 . 3 Bob 4 left 5 . 6 He 7 left 8 . 9; scored: Bob (4) and He (7)
    for missing, same_head in (("nearest", [True, True]), ("wrong", [True, False])):
        s = score_coref([word_result(seg)], [seg], no_same_head=missing)
        assert [m["mention"] for m in s.mentions] == ["Bob", "He"]
        assert s.baselines["nearest"].tolist() == [True, True]  # Bob (4) -> Bob (2); He -> Bob (4)
        assert s.baselines["same_head"].tolist() == same_head  # Bob (4) -> Bob (2); He -> none
        assert s.baseline_accuracy()["same_head"] == sum(same_head) / 2


def test_scored_mentions_say_where_they_are_in_segment_and_document():
    text = conllu("""
It PRON 2 expl
rained VERB 0 root
all DET 4 det
day NOUN 2 obl
long ADV 2 advmod
""", """
The DET 2 det (e1-person-2
boss NOUN 3 nsubj e1)
smiled VERB 0 root
. PUNCT 3 punct
""", """
The DET 2 det (e1-person-2
woman NOUN 3 nsubj e1)
left VERB 0 root
. PUNCT 3 punct
""")
    segs = coref_segments(read_coref(text), max_tokens=10)  # 8 words an input: [It rained all day long], [the rest]
    assert [len(s.sentence.words) for s in segs] == [5, 8] and [s.offset for s in segs] == [0, 5]
    s = score_coref([word_result(seg) for seg in segs], segs)
    (m,) = s.mentions
    assert m["mention"] == "The woman" and m["segment"] == 1
    assert (m["start"], m["end"], m["head_index"]) == (4, 5, 5)  # in the segment: The 4, woman 5
    assert (m["doc_start"], m["doc_end"], m["doc_head_index"]) == (9, 10, 10)  # in the document: after 5 + 4 words
    doc = read_coref(text)[0]
    assert " ".join(doc.words[m["doc_start"]:m["doc_end"] + 1]) == "The woman"


# -- what the model reads: text="surface" | "words" (issue 33 §6) ----------------------------------------------------

# "Ann didn't see Bob. She called him." with "didn't" a multiword token (did + n't)
CONTRACTED = "\n".join([
    "# newdoc id = d", "# text = Ann didn't see Bob.",
    "1\tAnn\tAnn\tPROPN\t_\tGender=Fem\t4\tnsubj\t_\tEntity=(e1-person-1)",
    "2-3\tdidn't\t_\t_\t_\t_\t_\t_\t_\t_",
    "2\tdid\tdo\tAUX\t_\t_\t4\taux\t_\t_",
    "3\tn't\tnot\tPART\t_\t_\t4\tadvmod\t_\t_",
    "4\tsee\tsee\tVERB\t_\t_\t0\troot\t_\t_",
    "5\tBob\tBob\tPROPN\t_\tGender=Masc\t4\tobj\t_\tEntity=(e2-person-1)|SpaceAfter=No",
    "6\t.\t.\tPUNCT\t_\t_\t4\tpunct\t_\t_", "",
    "1\tShe\tshe\tPRON\t_\t_\t2\tnsubj\t_\tEntity=(e1-person-1)",
    "2\tcalled\tcall\tVERB\t_\t_\t0\troot\t_\t_",
    "3\thim\the\tPRON\t_\t_\t2\tobj\t_\tEntity=(e2-person-1)|SpaceAfter=No",
    "4\t.\t.\tPUNCT\t_\t_\t2\tpunct\t_\t_", "",
])


def test_text_words_reads_the_syntactic_words():
    surface, words = (read_coref(CONTRACTED, text=t)[0] for t in ("surface", "words"))
    assert [s.text for s in surface.sentences] == ["Ann didn't see Bob.", "She called him."]  # '# text', else built
    assert [s.text for s in words.sentences] == ["Ann did n't see Bob .", "She called him ."]
    assert surface.sentences[0].surface[1] == ("didn't", (1, 2)) and words.sentences[0].surface == []
    # the words, the mentions and their heads are the same: only what the model reads changes
    assert words.words == surface.words
    assert [(m.entity, m.start, m.end, m.head) for m in words.mentions] == \
        [(m.entity, m.start, m.end, m.head) for m in surface.mentions] == \
        [("e1", 0, 0, 0), ("e2", 4, 4, 4), ("e1", 6, 6, 6), ("e2", 8, 8, 8)]
    assert [s.text for s in coref_segments([words])] == ["Ann did n't see Bob . She called him ."]
    # a CoNLL-2012 file's text is its words joined by spaces either way
    plain = "\n".join(["#begin document (d); part 000", "d 0 0 Ann NNP (1)", "d 0 1 smiled VBD -",
                       "d 0 2 . . -", "", "d 0 0 She PRP (1)", "d 0 1 left VBD -", "#end document"])
    assert [s.text for s in read_coref(plain, text="words")[0].sentences] == \
        [s.text for s in read_coref(plain)[0].sentences] == ["Ann smiled .", "She left"]
    with pytest.raises(ValueError, match="text must be 'surface' or 'words'"):
        read_coref(CONTRACTED, text="tokens")  # type: ignore[arg-type]

"""Topic indicators and their counts (``dolda.sampler.counts``) against plain numpy recounts.

Small and fast (they are also the test selection of the mutation run over
``counts.py``, docs/MUTATION.md): every count is recomputed here from ``z`` and
the tokens with ``np.add.at`` / ``np.bincount``, never through the library.
"""

import numpy as np
import pytest
from scipy import stats

from dolda.sampler import counts as C

pytestmark = pytest.mark.power


def _corpus(seed=0, D=40, V=23, K=5, max_len=30):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, max_len, D)
    lengths[3] = 0  # an empty document
    doc_ptr = np.zeros(D + 1, np.int64)
    np.cumsum(lengths, out=doc_ptr[1:])
    tokens = rng.integers(0, V - 2, doc_ptr[-1]).astype(np.int32)  # word V-2 never used
    tokens[:4] = V - 1  # ... and the last word is
    z = rng.integers(0, K, len(tokens)).astype(np.int32)
    z[z == 2] = 1  # topic 2 is empty
    return tokens, doc_ptr, z, V, K


def _dense(tokens, z, K, V):
    nkw = np.zeros((K, V), np.int64)
    np.add.at(nkw, (z, tokens), 1)
    return nkw


def _sparse_to_dense(sc, K, V):
    out = np.zeros((K, V), np.int64)
    for k in range(K):
        sl = slice(sc.ptr[k], sc.ptr[k + 1])
        words = sc.words[sl]
        assert np.all(np.diff(words) > 0), "words must increase within a topic"
        assert np.all(sc.counts[sl] > 0), "only non-zero counts are stored"
        out[k, words] = sc.counts[sl]
    return out


def test_initial_topics_are_uniform_and_counted_per_document():
    tokens, doc_ptr, _, _, K = _corpus(D=300, max_len=40)
    z, ndk = C.init_topics(tokens, doc_ptr, K, 5)
    assert z.shape == tokens.shape and ndk.shape == (len(doc_ptr) - 1, K)
    assert z.min() >= 0 and z.max() <= K - 1
    doc_of = np.repeat(np.arange(len(doc_ptr) - 1), np.diff(doc_ptr))
    expected = np.zeros_like(ndk)
    np.add.at(expected, (doc_of, z), 1)
    np.testing.assert_array_equal(ndk, expected)
    # uniform over the K topics (chi-square, fixed seed, p > 1e-4), every topic used
    freq = np.bincount(z, minlength=K)
    assert stats.chisquare(freq).pvalue > 1e-4, freq
    # the same seed gives the same start, another seed another one
    z2, _ = C.init_topics(tokens, doc_ptr, K, 5)
    np.testing.assert_array_equal(z, z2)
    assert not np.array_equal(z, C.init_topics(tokens, doc_ptr, K, 6)[0])
    # documents draw from their own streams: tokens of a document are not all one topic,
    # and two documents do not repeat each other's sequence
    first = [tuple(z[doc_ptr[d]:doc_ptr[d] + 5]) for d in range(len(doc_ptr) - 1)
             if doc_ptr[d + 1] - doc_ptr[d] >= 5]
    assert len(set(first)) > 0.9 * len(first)


def test_dense_topic_word_counts_equal_a_recount():
    tokens, _, z, V, K = _corpus()
    nkw = C.topic_word_counts(tokens, z, K, V)
    assert nkw.shape == (K, V)
    np.testing.assert_array_equal(nkw, _dense(tokens, z, K, V))


def test_word_index_groups_token_positions_by_word_in_order():
    tokens, _, _, V, _ = _corpus()
    word_ptr, order = C.word_index(tokens, V)
    assert word_ptr.shape == (V + 1,) and word_ptr[0] == 0 and word_ptr[-1] == len(tokens)
    np.testing.assert_array_equal(np.diff(word_ptr), np.bincount(tokens, minlength=V))
    np.testing.assert_array_equal(np.sort(order), np.arange(len(tokens)))
    for w in range(V):
        pos = order[word_ptr[w]:word_ptr[w + 1]]
        assert np.all(tokens[pos] == w)
        assert np.all(np.diff(pos) > 0)  # stable: positions increase


@pytest.mark.parametrize("seed", [0, 1])
def test_sparse_topic_word_counts_equal_a_recount(seed):
    tokens, _, z, V, K = _corpus(seed)
    sc = C.sparse_topic_word_counts(*C.word_index(tokens, V), z, K)
    assert sc.ptr.shape == (K + 1,) and sc.ptr[0] == 0
    assert len(sc.words) == len(sc.counts) == sc.ptr[-1]
    dense = _dense(tokens, z, K, V)
    assert sc.ptr[-1] == np.count_nonzero(dense)
    np.testing.assert_array_equal(_sparse_to_dense(sc, K, V), dense)


@pytest.mark.parametrize("n_chunks", [1, 2, 5, 64])
def test_sparse_counts_are_the_same_arrays_for_any_chunks_of_words(n_chunks):
    # the count kernel works on chunks of words in parallel and places each chunk's words
    # in every topic's bucket by a prefix over (topic, chunk): whatever the chunks (one,
    # several, more than there are used words: some empty), the arrays are the recount's,
    # words increasing within every topic
    tokens, _, z, V, K = _corpus(3, D=80)
    word_ptr, order = C.word_index(tokens, V)
    bounds = C.count_chunks(word_ptr, n_chunks)
    assert bounds[0] == 0 and bounds[-1] == V and np.all(np.diff(bounds) > 0)
    assert len(bounds) - 1 == n_chunks if n_chunks < 10 else len(bounds) - 1 <= V
    sc = C.sparse_topic_word_counts(word_ptr, order, z, K, n_chunks)
    dense = _dense(tokens, z, K, V)
    assert sc.ptr[-1] == np.count_nonzero(dense) == len(sc.words) == len(sc.counts)
    np.testing.assert_array_equal(_sparse_to_dense(sc, K, V), dense)
    one = C.sparse_topic_word_counts(word_ptr, order, z, K, 1)
    for a, b in zip(sc, one):
        np.testing.assert_array_equal(a, b)


def test_merged_shard_counts_equal_the_whole_corpus_counts_array_for_array():
    tokens, doc_ptr, z, V, K = _corpus(2, D=60)
    whole = C.sparse_topic_word_counts(*C.word_index(tokens, V), z, K)
    cuts = [0, int(doc_ptr[17]), int(doc_ptr[18]), int(doc_ptr[41]), len(tokens)]
    parts = [C.sparse_topic_word_counts(*C.word_index(tokens[a:b], V), z[a:b], K)
             for a, b in zip(cuts[:-1], cuts[1:])]
    for order in (parts, parts[::-1], [parts[2], parts[0], parts[3], parts[1]]):
        merged = C.merge_sparse_counts(order)
        for got, want in zip(merged, whole):
            np.testing.assert_array_equal(got, want)
    one = C.merge_sparse_counts([whole])
    np.testing.assert_array_equal(_sparse_to_dense(one, K, V), _dense(tokens, z, K, V))


@pytest.mark.parametrize("n_parts", [2, 3, 5])
def test_merge_of_sorted_runs_and_of_an_unsorted_part_equals_the_whole_corpus_counts(n_parts):
    # the merge takes each part's run as sorted by word and merges neighbouring runs
    # (odd counts leave a run for the next round); a part whose words are out of order in a
    # topic (not the layout the count kernel writes, but a caller's) goes through a sort
    tokens, doc_ptr, z, V, K = _corpus(4, D=70)
    whole = C.sparse_topic_word_counts(*C.word_index(tokens, V), z, K)
    cuts = np.linspace(0, 70, n_parts + 1).astype(int)
    parts = [C.sparse_topic_word_counts(*C.word_index(tokens[doc_ptr[a]:doc_ptr[b]], V),
                                        z[doc_ptr[a]:doc_ptr[b]], K)
             for a, b in zip(cuts[:-1], cuts[1:])]
    for merged in (C.merge_sparse_counts(parts), C.merge_sparse_counts(parts[::-1])):
        for got, want in zip(merged, whole):
            np.testing.assert_array_equal(got, want)
    first = parts[0]
    words = first.words.copy()
    counts = first.counts.copy()
    for k in range(K):  # reverse every topic's run of the first part
        a, b = first.ptr[k], first.ptr[k + 1]
        words[a:b] = words[a:b][::-1]
        counts[a:b] = counts[a:b][::-1]
    shuffled = C.SparseCounts(first.ptr, words, counts)
    for got, want in zip(C.merge_sparse_counts([shuffled] + parts[1:]), whole):
        np.testing.assert_array_equal(got, want)



def test_merge_sees_a_single_swapped_neighbour_pair_in_a_part():
    # topic 0 of the first part is in order but for one neighbour pair (8, 7); every entry is
    # still above the one two back, and the second part has one entry: the order check must
    # compare each entry with the one just before it in its own part, else the run is merged
    # as if sorted (words 0 5 6 8 7 9).  Topic 1 is in order in both parts.
    first = C.SparseCounts(np.array([0, 5, 7]), np.array([5, 6, 8, 7, 9, 1, 4], np.int32),
                           np.array([1, 2, 3, 4, 5, 6, 7], np.int32))
    second = C.SparseCounts(np.array([0, 1, 3]), np.array([0, 2, 4], np.int32),
                            np.array([10, 20, 30], np.int32))
    for parts in ([first, second], [second, first]):
        merged = C.merge_sparse_counts(parts)
        np.testing.assert_array_equal(merged.ptr, [0, 6, 9])
        np.testing.assert_array_equal(merged.words, [0, 5, 6, 7, 8, 9, 1, 2, 4])
        np.testing.assert_array_equal(merged.counts, [10, 1, 2, 4, 3, 5, 6, 20, 37])


def test_merge_sorts_only_the_topics_whose_part_runs_are_out_of_order(monkeypatch):
    # the merge's point (O(m log S) per topic): runs already sorted by word are merged, not
    # sorted again; only a topic with a part out of order goes through the stable sort.  The
    # kernel's Python function is run with a numpy whose argsort records its calls.
    sorted_calls = []

    class RecordingNumpy:
        def __getattr__(self, name):
            if name == "argsort":
                def argsort(a, kind=None):
                    sorted_calls.append(len(a))
                    return np.argsort(a, kind=kind)
                return argsort
            return getattr(np, name)

    merge = getattr(C._merge_counts, "py_func", C._merge_counts)
    monkeypatch.setattr(C, "np", RecordingNumpy())
    ptrs = np.array([[0, 3, 5], [5, 7, 9], [9, 10, 12]], np.int64)
    words = np.array([1, 4, 6, 0, 3, 2, 4, 5, 7, 5, 8, 1], np.int32)  # topic 1 of part 2: 8, 1
    counts = np.arange(1, 13, dtype=np.int32)
    out_words, out_counts = np.empty(12, np.int32), np.empty(12, np.int32)
    out_len = np.empty(2, np.int64)
    merge(ptrs, words, counts, out_words, out_counts, out_len)
    assert sorted_calls == [6]  # topic 1 only (0 3 + 5 7 + 8 1), topic 0 merged
    np.testing.assert_array_equal(out_len, [5, 6])
    np.testing.assert_array_equal(out_words[:5], [1, 2, 4, 5, 6])
    np.testing.assert_array_equal(out_counts[:5], [1, 6, 2 + 7, 10, 3])
    np.testing.assert_array_equal(out_words[6:12], [0, 1, 3, 5, 7, 8])  # from start[1] = 6
    np.testing.assert_array_equal(out_counts[6:12], [4, 12, 5, 8, 9, 11])

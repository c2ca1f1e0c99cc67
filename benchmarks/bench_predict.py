"""Prediction throughput: topic proportions of new documents with Phi fixed (paper section 3.3).

Corpus: 20 Newsgroups "bydate"; the vocabulary (:class:`dolda.design.corpus.Vocabulary`, stop list,
rarest 1% of tokens removed) is fitted on the training split, the test split is predicted.
Phi: one topic model per K trained on the training split (``--train-iters`` iterations,
alpha = 0.1, beta = 0.01) by tomotopy's ``LDAModel`` when it is importable, so that dolda
and tomotopy predict with the *same* topics, else by :class:`dolda.LDA` (and tomotopy is
skipped, with a note).  ``--quick`` predicts a simulated corpus with its true Phi.

Contenders, each with ``--sweeps`` sweeps (dolda: burn-in half of them, as ``DOLDA.transform``):

* ``auto f32`` (first: what ``DOLDA.predict`` runs) -- :func:`predict_topic_proportions`
  with its default kernel (sparse from ``SPARSE_PREDICT_MIN_TOPICS`` topics on) and
  estimator (Rao-Blackwellised), Phi in float32, the dtype of a fitted ``DOLDA.phi_``;
* ``auto`` -- the same with Phi in float64;
* ``tomotopy`` -- ``LDAModel.infer(docs, iterations=sweeps, workers=threads)``.

Two workloads: the whole test split in one call (``batch``), and ``--single`` documents
predicted one call each (``single``, the service's pattern).  Rounds are interleaved.

Usage::

    python -m benchmarks.bench_predict [--topics 100 1000] [--threads 2] [--rounds 3]
        [--sweeps 50] [--train-iters 100] [--single 200] [--docs 0]
    python -m benchmarks.bench_predict --quick

Writes ``benchmarks/results/predict.json`` and ``.md``.
"""

from __future__ import annotations

import numpy as np

from benchmarks import harness
ALPHA, BETA = 0.1, 0.01


def train_topics(docs, words, K, threads, iters):
    """``(phi (K, V) in dolda's word order, tomotopy model)`` trained on ``docs``."""
    import tomotopy as tp

    model = tp.LDAModel(k=K, alpha=ALPHA, eta=BETA, seed=1)
    for doc in docs:
        if doc:
            model.add_doc(doc)
    model.train(iters, workers=threads)
    column = {w: j for j, w in enumerate(model.used_vocabs)}
    order = np.array([column.get(w, -1) for w in words])  # -1: a word no training doc has
    phi = np.stack([np.asarray(model.get_topic_word_dist(k), np.float64) for k in range(K)])
    phi = np.where(order >= 0, phi[:, np.maximum(order, 0)], 1e-12)
    return phi / phi.sum(axis=1, keepdims=True), model


def newsgroups_sample(data_dir, n_docs=0, seed=1):
    """20 Newsgroups as these benchmarks use it: the vocabulary fitted on the training split,
    ``n_docs`` test documents drawn at random (0: all), in their order.

    Returns ``(words, train_docs, tokens, doc_ptr)``: the vocabulary's words (object array),
    the training documents as word lists (for tomotopy), the sample's token ids (int32) and
    its CSR pointers (int64).
    """
    from dolda.design.corpus import Vocabulary
    from dolda.datasets import load_20newsgroups

    train = load_20newsgroups(data_dir, "train")
    test = load_20newsgroups(data_dir, "test")
    vocab = Vocabulary()
    corpus = vocab.fit_transform(train.text.tolist())
    new = vocab.transform(test.text.tolist())
    words = np.asarray(corpus.words, dtype=object)
    tokens, doc_ptr = new.tokens, new.doc_ptr
    if n_docs:
        keep = np.sort(np.random.default_rng(seed).choice(new.n_docs, size=min(n_docs,
                                                          new.n_docs), replace=False))
        parts = [tokens[doc_ptr[d]:doc_ptr[d + 1]] for d in keep]
        tokens = np.concatenate(parts).astype(np.int32)
        doc_ptr = np.concatenate([[0], np.cumsum([len(p) for p in parts])]).astype(np.int64)
    train_docs = [list(words[corpus.tokens[a:b]])
                  for a, b in zip(corpus.doc_ptr[:-1], corpus.doc_ptr[1:])]
    return words, train_docs, tokens, doc_ptr


def run_dolda(tokens, doc_ptr, phi, sweeps, seed, method):
    from dolda.sampler.predict import predict_topic_proportions

    return predict_topic_proportions(tokens, doc_ptr, phi, ALPHA, sweeps, sweeps // 2, seed,
                                     method=method)


def dolda_topics(docs, K, threads, iters):
    """Phi (K, V) of a :class:`dolda.LDA` fit, in the vocabulary's word order."""
    from dolda.models.lda import LDA

    words = sorted({w for d in docs for w in d})
    model = LDA(n_topics=K, alpha=ALPHA, beta=BETA, n_iter=iters, random_state=1,
                n_jobs=threads, progress=False, rare_share=0).fit(docs)
    column = {w: j for j, w in enumerate(model.vocabulary_.words)}
    return np.asarray(model.phi_, np.float64)[:, [column[w] for w in words]], words


def quick_sample(K):
    """A simulated corpus: its true Phi, training and test documents of its words."""
    from dolda.datasets import simulate

    sim = simulate(n_docs=120, n_topics=K, vocab_size=200, doc_length=40, random_state=0)
    tokens = sim.words[sim.doc_ptr[60]:].astype(np.int32)
    doc_ptr = (sim.doc_ptr[60:] - sim.doc_ptr[60]).astype(np.int64)
    words = np.asarray(sim.vocabulary, dtype=object)
    train_docs = [list(words[sim.words[a:b]]) for a, b in zip(sim.doc_ptr[:60],
                                                               sim.doc_ptr[1:61])]
    return words, train_docs, tokens, doc_ptr, sim.phi


def main(argv=None):
    parser = harness.parser(__doc__)
    parser.add_argument("--topics", type=int, nargs="+", default=None,
                        help="default 100 1000 (4 with --quick)")
    parser.add_argument("--sweeps", type=int, default=50)
    parser.add_argument("--train-iters", type=int, default=100)
    parser.add_argument("--docs", type=int, default=0,
                        help="predict a fixed random subset of this many test documents "
                             "(0: all)")
    parser.add_argument("--single", type=int, default=200,
                        help="documents predicted one call each (0: skip)")
    args = parser.parse_args(argv)
    run = harness.start("predict", args, argv)
    n_rounds = harness.rounds(args, full=3, quick=2)
    topics = args.topics or ([4] if args.quick else [100, 1000])
    sweeps = 6 if args.quick else args.sweeps
    n_single = min(args.single, 10) if args.quick else args.single

    from dolda.sampler.predict import SPARSE_PREDICT_MIN_TOPICS
    from dolda.sampler.threads import using_threads

    tp = harness.optional("tomotopy")
    if tp is None:
        run.note("tomotopy is not importable: Phi comes from dolda.LDA and tomotopy's infer "
                 "is skipped")
    rows = []
    for K in topics:
        if args.quick:
            words, train_docs, tokens, doc_ptr, phi = quick_sample(K)
        else:
            words, train_docs, tokens, doc_ptr = newsgroups_sample(args.data, args.docs)
        n_docs = len(doc_ptr) - 1
        single = np.random.default_rng(0).choice(n_docs, size=min(n_single, n_docs),
                                                 replace=False)
        test_docs = [list(words[tokens[a:b]]) for a, b in zip(doc_ptr[:-1], doc_ptr[1:])]
        tm = None
        if tp is not None:
            phi, tm = train_topics(train_docs, list(words), K, args.threads, args.train_iters)
        elif not args.quick:
            phi, kept = dolda_topics(train_docs, K, args.threads, args.train_iters)
            if len(kept) != len(words):  # words only in rare documents: give them no mass
                full = np.full((K, len(words)), 1e-12)
                full[:, np.searchsorted(np.asarray(words, dtype=str), kept)] = phi
                phi = full / full.sum(axis=1, keepdims=True)
        phi32 = phi.astype(np.float32)  # the dtype of a fitted DOLDA's phi_

        def dolda_single(p, idx=single):
            for d in idx:
                a, b = doc_ptr[d], doc_ptr[d + 1]
                run_dolda(tokens[a:b], np.array([0, b - a], np.int64), p, sweeps, 1, "auto")

        contenders = {"batch auto f32": lambda: run_dolda(tokens, doc_ptr, phi32, sweeps, 2,
                                                          "auto"),
                      "batch auto": lambda: run_dolda(tokens, doc_ptr, phi, sweeps, 2, "auto")}
        if tm is not None:
            tdocs = [tm.make_doc(d) for d in test_docs]
            contenders["batch tomotopy"] = lambda: tm.infer(tdocs, iterations=sweeps,
                                                            workers=args.threads)
        if len(single):
            contenders["single auto f32"] = lambda: dolda_single(phi32)
            contenders["single auto"] = lambda: dolda_single(phi)
            if tm is not None:
                contenders["single tomotopy"] = lambda: [
                    tm.infer(tdocs[d], iterations=sweeps, workers=args.threads)
                    for d in single]
        with using_threads(args.threads):
            wrapped = {k: (lambda f=f: (f(), None)[1]) for k, f in contenders.items()}
            times = run.interleave(wrapped, n_rounds, warmup=1)
        for work in ("batch", "single"):
            part = {k.split(" ", 1)[1]: v for k, v in times.items() if k.startswith(work)}
            if not part:
                continue
            ref = "tomotopy" if "tomotopy" in part else "auto f32"
            docs = n_docs if work == "batch" else len(single)
            summary = harness.summarise(part, ref)
            for name, sm in summary.items():
                sm["documents"] = docs
                sm["docs_per_s_median"] = docs / sm["median_seconds"]
            rows.append({"K": K, "workload": work, "reference": ref, "contestants": summary})
            print(f"K={K} {work}: auto f32 {summary['auto f32']['docs_per_s_median']:.3g} "
                  f"docs/s, speed {summary['auto f32']['speed_ratio']:.2f}x {ref}", flush=True)
    result = {"settings": {"threads": args.threads, "rounds": n_rounds, "sweeps": sweeps,
                           "burn_in": sweeps // 2, "alpha": ALPHA, "beta": BETA,
                           "train_iters": args.train_iters,
                           "topics_from": "tomotopy" if tp is not None else (
                               "simulated truth" if args.quick else "dolda.LDA"),
                           "sparse_from_topics": SPARSE_PREDICT_MIN_TOPICS,
                           "single_documents": int(n_single)},
              "rows": rows}
    lines = [f"{sweeps} sweeps (burn-in {sweeps // 2}), {args.threads} threads, {n_rounds} "
             f"interleaved rounds; topics from {result['settings']['topics_from']}; the "
             f"sparse kernel from K = {SPARSE_PREDICT_MIN_TOPICS}.", ""]
    for r in rows:
        lines += [f"## K = {r['K']}, {r['workload']} "
                  f"({next(iter(r['contestants'].values()))['documents']} documents)", ""]
        lines += harness.table(r["contestants"]) + [""]
    run.finish(result, lines, "Prediction throughput")
    return result


if __name__ == "__main__":
    main()

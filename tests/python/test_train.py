"""Training from Python: the Trainer with a Python progress callback (its loop releases
the GIL, so other Python threads run), a Python-driven loop that equals the C++ trainer's,
and the study run from Python."""
import os
import threading

import numpy as np
import pytest

import headgrad as hg


def test_trainer_reports_through_python_and_releases_the_gil():
    hg.set_num_threads(1)
    task = hg.train.make_task("copy", seed=0, length=6)
    model = hg.nn.GPT(vocab_size=task.vocab_size, max_len=task.max_len, d_model=32, nhead=2,
                      num_layers=2, generator=hg.Generator(0))
    opt = hg.optim.Adam(model.parameters(), lr=3e-3)
    seen = []
    trainer = hg.train.Trainer(model, task, opt, steps=120, batch_size=32, eval_every=40,
                               eval_batches=2, progress=False,
                               on_evaluate=lambda tr, va: seen.append((tr["step"], va["loss"])))
    count = [0]
    done = threading.Event()

    def spin():
        while not done.is_set():
            count[0] += 1
    t = threading.Thread(target=spin)
    t.start()
    result = trainer.fit()
    done.set()
    t.join()
    assert [s for s, _ in seen] == [40, 80, 120]
    assert seen[-1][1] < seen[0][1]
    assert result["steps_done"] == 120
    assert count[0] > 1000, count[0]


def test_a_python_loop_equals_the_trainer():
    task = hg.train.make_task("associative_recall", seed=1, length=4)

    def make():
        model = hg.nn.GPT(vocab_size=task.vocab_size, max_len=task.max_len, d_model=16, nhead=2,
                          num_layers=1, generator=hg.Generator(5))
        return model, hg.optim.SGD(model.parameters(), lr=0.05)
    a, opt_a = make()
    hg.train.Trainer(a, task, opt_a, steps=5, batch_size=8, eval_every=0, progress=False).fit()
    b, opt_b = make()
    for step in range(5):
        batch = task.batch("train", step, 8)
        loss = hg.train.task_loss(b(batch.tokens, batch.key_padding_mask), batch)
        opt_b.zero_grad()
        loss.backward()
        opt_b.step()
    for (name, pa), (_, pb) in zip(a.named_parameters(), b.named_parameters()):
        np.testing.assert_array_equal(pa.detach().numpy(), pb.detach().numpy(), err_msg=name)


def test_every_task_kind_trains_with_its_models_default_forward():
    # Seeded models: the default generator's state depends on the tests run before this one.
    for name, make in [("char_classification", lambda t: hg.nn.EncoderClassifier(
                            t.vocab_size, t.max_len, t.num_classes, d_model=16, nhead=2, num_layers=1,
                            generator=hg.Generator(4))),
                       ("fusion", lambda t: hg.nn.FusionClassifier(
                            t.vocab_size, t.max_len, t.num_features, t.num_classes, d_model=16, nhead=2,
                            num_layers=1, generator=hg.Generator(4)))]:
        task = hg.train.make_task(name, seed=0)
        model = make(task)
        before = hg.train.evaluate(model, task, batches=2, batch_size=16)
        opt = hg.optim.Adam(model.parameters(), lr=3e-3)
        hg.train.Trainer(model, task, opt, steps=100, batch_size=16, eval_every=0, progress=False).fit()
        after = hg.train.evaluate(model, task, batches=2, batch_size=16)
        assert after["loss"] < before["loss"] - 0.02, (name, before["loss"], after["loss"])


def test_heads_compare_runs_from_python_and_returns_the_summary(work_dir):
    out = os.path.join(work_dir, "study")
    summary = hg.study.heads_compare(preset="smoke", tasks=["associative_recall"], heads=[1, 2],
                                     seeds=1, steps=20, jobs=2, out=out, quiet=True)
    assert os.path.exists(summary["report_path"])
    assert summary["preset"] == "smoke"
    again = hg.study.heads_compare(preset="smoke", tasks=["associative_recall"], heads=[1, 2],
                                   seeds=1, steps=20, jobs=2, out=out, quiet=True)
    assert again["runs_trained"] == 0 and again["runs_cached"] > 0  # all from the cache


def test_heads_compare_follow_up_options_reach_the_command_line():
    args = hg.study.command_line("smoke", long_budget=3, extend_lrs=False)
    assert args[args.index("--long-budget") + 1] == "3" and "--no-extend-lrs" in args
    assert "--extend-lrs" in hg.study.command_line("smoke", extend_lrs=True)
    assert not any("extend" in a for a in hg.study.command_line("smoke"))


def test_char_lm_reads_a_corpus_given_from_python_and_probes_induction(work_dir):
    path = os.path.join(work_dir, "corpus.txt")
    with open(path, "w", encoding="utf-8") as f:
        for d in range(400):
            f.write("document %d says caf\u00e9 %s\n%%\n" % (d, "ab" * (d % 7)))
    task = hg.train.make_task("char_lm", seed=1, length=12, corpus=path)
    assert task.kind == "sequence" and task.max_len == 12
    batch = task.batch("validation", 0, 4)
    tokens, targets = batch.tokens.numpy(), batch.targets.numpy()
    np.testing.assert_array_equal(tokens[:, 1:], targets[:, :-1])  # the next character
    names = [b["name"] for b in task.baselines("validation", 2, 8)]
    assert names == ["chance", "unigram", "bigram"]
    labels = [text for text, _ in task.token_labels(tokens[0].tolist())]
    assert all(labels)
    probe = hg.train.induction_probe(task, 5, 3, seed=2)
    rows = probe.tokens.numpy()
    np.testing.assert_array_equal(rows[:, :5], rows[:, 5:])
    with pytest.raises(hg.ValueError, match="does not exist"):
        hg.train.make_task("char_lm", corpus=os.path.join(work_dir, "missing"))

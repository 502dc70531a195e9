"""The attention view from Python: AttentionView's page holds the captured patterns (within
one 16-bit step) and the task's token labels, refers to nothing outside itself, refuses
models that do not fit a group; Capture shows itself inline (_repr_html_); the page a
Python session writes passes the browser test where chromium and puppeteer-core are."""
import base64
import html
import json
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

import headgrad as hg

HERE = os.path.dirname(os.path.abspath(__file__))
BROWSER = os.path.join(HERE, "..", "browser")


def page_data(page):
    """The DATA object embedded in a page."""
    match = re.search(r"const DATA = (\{.*?\});\n", page, re.S)
    assert match, "no DATA in the page"
    return json.loads(match.group(1))


def decoded(model):
    raw = base64.b64decode(model["patterns"])
    return np.frombuffer(raw, dtype="<u2").astype(np.float64) / 65535


def two_models():
    task = hg.train.make_task("associative_recall", seed=0, length=4)
    batch = task.batch("validation", 0, 5)
    models = [hg.nn.GPT(vocab_size=task.vocab_size, max_len=task.max_len, d_model=16, nhead=h,
                        num_layers=2, generator=hg.Generator(h)) for h in (1, 8)]
    return task, batch, models


def test_the_page_holds_the_captured_patterns_and_the_tasks_labels():
    task, batch, (m1, m8) = two_models()
    view = hg.inspect.AttentionView("recall: <H = 1> & H = 8", note="a note")
    view.add("H = 1", m1, batch.tokens, task=task)
    view.add("H = 8", m8, batch.tokens, task=task, scores={"importance": np.arange(16).reshape(2, 8)})
    page = view.html()
    assert "<title>recall: &lt;H = 1&gt; &amp; H = 8</title>" in page
    for outside in ("http://", "https://", 'src="//', "@import", "fetch("):
        assert outside not in page
    data = page_data(page)
    (group,) = data["groups"]
    assert group["pair"] == [0, 1] and group["T"] == batch.tokens.shape[1]
    labels = task.token_labels(batch.tokens.tolist()[2])
    assert group["examples"][2]["tokens"] == [t for t, _ in labels]
    assert group["examples"][2]["roles"] == [r for _, r in labels]
    assert "?K" in "".join(group["examples"][2]["tokens"])
    for model, page_model in zip((m1, m8), group["models"]):
        with hg.no_grad(), hg.inspect.Capture(model, ["pattern"]) as cap:
            model.eval()
            model(batch.tokens)
        expected = np.stack([cap[f"layers.{l}.self_attn.pattern"] for l in range(2)], axis=1)
        np.testing.assert_allclose(decoded(page_model), expected.ravel(), atol=0.5 / 65535 + 1e-7)
    assert group["models"][1]["scores"][0]["values"][1][7] == 15
    assert m1.training is False  # eval() above; add() itself restores the mode:
    m1.train()
    view.add("again", m1, batch.tokens, task=task)
    assert m1.training


def test_models_that_do_not_fit_the_group_are_refused_by_name():
    task, batch, (m1, _) = two_models()
    view = hg.inspect.AttentionView().add("five", m1, batch.tokens, task=task)
    with pytest.raises(ValueError, match="model 'three' has 3 examples of .* group 'examples' holds 5"):
        view.add("three", m1, batch.tokens[:3], task=task)
    view.add("three", m1, batch.tokens[:3], task=task, group="another")  # its own group
    assert [g["name"] for g in page_data(view.html())["groups"]] == ["examples", "another"]
    with pytest.raises(ValueError, match="patterns of shape"):
        view.add_patterns("flat", np.zeros((2, 3)), [["a"] * 3] * 2)
    with pytest.raises(hg.ValueError, match="outside \\[0, 1\\]"):
        hg.inspect.AttentionView().add_patterns("bad", np.full((1, 1, 1, 2, 2), 2.0),
                                                [["a", "b"]]).html()


def test_bad_scores_are_refused_by_add_and_the_view_stays_usable(work_dir):
    task, batch, (m1, m8) = two_models()
    view = hg.inspect.AttentionView().add("H = 1", m1, batch.tokens, task=task)
    for scores, words in [({"induction": np.zeros((3, 3))}, "has shape \\(3, 3\\); one value"),
                          ({"induction": [["x"]]}, "not numeric"),
                          ({1: np.zeros((2, 8))}, "score keys are str"),
                          ([0.5], "scores is a dict")]:
        with pytest.raises((ValueError, TypeError), match=words):
            view.add("H = 8", m8, batch.tokens, task=task, scores=scores)
        with pytest.raises((ValueError, TypeError), match=words):  # a new group: not created
            view.add("H = 8", m8, batch.tokens, task=task, scores=scores, group="fresh")
    assert [g["name"] for g in page_data(view.html())["groups"]] == ["examples"]
    view.save(os.path.join(work_dir, "after_failed_adds.html"))
    view.add("H = 8", m8, batch.tokens, task=task, scores={"induction": np.zeros((2, 8))})
    assert len(page_data(view.html())["groups"][0]["models"]) == 2


def test_save_and_the_inline_views(work_dir):
    task, batch, (m1, m8) = two_models()
    view = hg.inspect.AttentionView().add("H = 1", m1, batch.tokens, task=task)
    path = os.path.join(work_dir, "view.html")
    view.save(path)
    with open(path, encoding="utf-8") as f:
        assert f.read() == view.html()
    inline = view._repr_html_()
    assert inline.startswith("<iframe") and html.unescape(inline).count("const DATA = ") == 1
    with hg.inspect.Capture(m8, ["pattern"]) as cap:
        m8(batch.tokens)
    assert cap._repr_html_().startswith("<iframe")
    with hg.inspect.Capture(m8, ["z"]) as no_patterns:
        m8(batch.tokens)
    assert no_patterns._repr_html_() is None


def test_a_page_written_from_python_passes_the_browser_test(work_dir):
    node = shutil.which("node") or shutil.which("nodejs")
    chromium = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    if not node or not os.path.isdir(os.path.join(BROWSER, "node_modules", "puppeteer-core")) \
            or not os.path.exists(chromium):
        pytest.skip("no node, puppeteer-core or chromium (bash scripts/setup.sh --with-browser)")
    task, batch, (m1, m8) = two_models()
    view = hg.inspect.AttentionView().add("H = 1", m1, batch.tokens, task=task)
    view.add("H = 8", m8, batch.tokens, task=task)
    path = view.save(os.path.join(work_dir, "py_view.html"))
    result = subprocess.run([node, os.path.join(BROWSER, "view_test.mjs"), path, "-"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_labels_that_the_page_cannot_hold_are_refused_with_the_token_named():
    patterns = np.full((1, 1, 1, 2, 2), 0.5)
    add = lambda labels: hg.inspect.AttentionView().add_patterns("m", patterns, labels)  # noqa: E731
    where = "model 'm', group 'examples', example 0, token 1"
    with pytest.raises(hg.ValueError, match=where + ".*lone surrogate"):
        add([["a", "\udcff"]])
    with pytest.raises(hg.ValueError, match=where + ".*lone surrogate"):
        add([["a", ("\udcff", "key")]])
    with pytest.raises(hg.ValueError, match=where + r": the label b'x' is bytes.*decode"):
        add([["a", b"x"]])
    with pytest.raises(hg.ValueError, match=where + ": a label is a str or a .* got int 3"):
        add([["a", 3]])
    with pytest.raises(hg.ValueError, match=r"one list of labels per example \(1 example\(s\) "
                                            r"of 2 tokens\), got 0 list"):
        add([])
    with pytest.raises(hg.ValueError, match="example 0: 0 labels for 2 tokens"):
        add([[]])
    with pytest.raises(ValueError, match="patterns hold no example"):
        hg.inspect.AttentionView().add_patterns("m", np.zeros((0, 1, 1, 2, 2)), [])
    page = add([["é", ("K0", "key")]]).html()  # text beyond ASCII is fine
    assert "é" in page

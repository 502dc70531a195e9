"""headgrad.train: the synthetic tasks and char_lm (real text), their batches, the loss, evaluation and the Trainer.

    task = headgrad.train.make_task("associative_recall", seed=0, length=8)
    trainer = headgrad.train.Trainer(model, task, opt, steps=500, batch_size=64,
                                     on_evaluate=lambda train, val: print(val["accuracy"]))
    trainer.fit()   # runs without the GIL
"""
from ._headgrad.train import (  # noqa: F401
    IGNORE_INDEX, Batch, Task, Trainer, evaluate, evaluate_logits, induction_probe, load,
    make_task, save, task_loss, task_names,
)

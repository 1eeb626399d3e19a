"""Where the real models live: `<repo>/../shared/models/`, absent in a fresh clone."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHARED_MODELS = REPO.parent / "shared" / "models"
KWS = "kws_ref_model.tflite"
RESNET = "pretrainedResnet_quant.tflite"


def shared_models_present() -> bool:
    return (SHARED_MODELS / KWS).is_file() and (SHARED_MODELS / RESNET).is_file()

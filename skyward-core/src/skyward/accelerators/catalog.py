"""The accelerator catalog, as data: one row per card, from which every factory is generated.

Adding a card is adding a row here; the factory, `resolve()` spellings, `names()` and the type stub
follow from it (regenerate the stub with `python -m skyward.accelerators._stub`).

Memory is per card (per chip for TPUs and AWS silicon; per GPU for dual-GPU boards like K80, M60 and
A16), because that is the unit providers sell and frameworks see. The first memory variant is the
factory default: the size clouds usually rent, which is the largest one unless noted.
"""

from __future__ import annotations

from skyward.accelerators._model import Card

NVIDIA = "NVIDIA"
AMD = "AMD"
GOOGLE = "Google"
AWS = "AWS"

SXM_PCIE = ("SXM", "PCIe")

CARDS: tuple[Card, ...] = (
    # NVIDIA datacenter: Blackwell
    Card("GB300", NVIDIA, ("288GB",), "Blackwell Ultra superchip GPU (Grace + B300), NVL72 racks"),
    Card("B300", NVIDIA, ("288GB",), "Blackwell Ultra, HGX B300; largest HBM3e per GPU"),
    Card("GB200", NVIDIA, ("186GB",), "Blackwell superchip GPU (Grace + B200), NVL72 racks"),
    Card("B200", NVIDIA, ("180GB", "192GB"), "Blackwell, HGX B200; 180GB usable as clouds rent it"),
    Card("B100", NVIDIA, ("192GB",), "Blackwell, HGX B100 (air-cooled, lower power B200)"),
    # NVIDIA datacenter: Hopper
    Card("H200", NVIDIA, ("141GB",), "Hopper with 141GB HBM3e; H100 compute, more memory", ("SXM", "NVL")),
    Card(
        "H100",
        NVIDIA,
        ("80GB", "94GB"),
        "Hopper; the standard large-model training GPU",
        ("SXM", "PCIe", "NVL"),
        form_factor_memory=(("NVL", "94GB"),),
    ),
    Card("H800", NVIDIA, ("80GB",), "Hopper export variant (reduced NVLink) for China", SXM_PCIE),
    Card("H20", NVIDIA, ("96GB",), "Hopper export variant for China; inference oriented"),
    Card("GH200", NVIDIA, ("96GB", "144GB"), "Grace Hopper superchip; 96GB is what clouds usually rent"),
    # NVIDIA datacenter: Ampere
    Card("A100", NVIDIA, ("80GB", "40GB"), "Ampere; the previous-generation training workhorse", SXM_PCIE),
    Card("A800", NVIDIA, ("80GB", "40GB"), "Ampere export variant (reduced NVLink) for China", SXM_PCIE),
    Card("A40", NVIDIA, ("48GB",), "Ampere; visual computing and mid-size training"),
    Card("A30", NVIDIA, ("24GB",), "Ampere; mainstream inference, MIG capable"),
    Card("A16", NVIDIA, ("16GB",), "Ampere; four 16GB GPUs per board, VDI and light inference"),
    Card("A10", NVIDIA, ("24GB",), "Ampere; inference and graphics"),
    Card("A10G", NVIDIA, ("24GB",), "Ampere A10 variant on AWS g5 instances"),
    Card("A2", NVIDIA, ("16GB",), "Ampere; low-power entry inference"),
    # NVIDIA datacenter: Ada Lovelace
    Card("L40S", NVIDIA, ("48GB",), "Ada; inference and fine-tuning, strong FP8"),
    Card("L40", NVIDIA, ("48GB",), "Ada; graphics and inference"),
    Card("L4", NVIDIA, ("24GB",), "Ada; low-power inference, AWS g6 and GCP g2"),
    # NVIDIA datacenter: Turing and older
    Card("T4", NVIDIA, ("16GB",), "Turing; cheap inference and prototyping"),
    Card("T4G", NVIDIA, ("16GB",), "T4 on AWS Graviton g5g instances (arm64)"),
    Card("V100", NVIDIA, ("32GB", "16GB"), "Volta; first tensor cores, AWS p3 ships 16GB", SXM_PCIE),
    Card("P100", NVIDIA, ("16GB", "12GB"), "Pascal; HBM2 FP64 compute", SXM_PCIE),
    Card("P40", NVIDIA, ("24GB",), "Pascal; inference"),
    Card("P4", NVIDIA, ("8GB",), "Pascal; low-power inference"),
    Card("K80", NVIDIA, ("12GB",), "Kepler; 12GB per GPU of a dual-GPU board, AWS p2"),
    Card("M60", NVIDIA, ("8GB",), "Maxwell; 8GB per GPU of a dual-GPU board, AWS g3"),
    # NVIDIA workstation
    Card(
        "RTX_PRO_6000",
        NVIDIA,
        ("96GB",),
        "Blackwell workstation/server card",
        aliases=(
            "RTX PRO 6000 Blackwell",
            "RTX PRO 6000 Blackwell Server Edition",
            "RTX PRO 6000 Blackwell Workstation Edition",
        ),
    ),
    Card("RTX_6000_Ada", NVIDIA, ("48GB",), "Ada workstation flagship", aliases=("RTX 6000 Ada Generation",)),
    Card("RTX_5000_Ada", NVIDIA, ("32GB",), "Ada workstation", aliases=("RTX 5000 Ada Generation",)),
    Card("RTX_4500_Ada", NVIDIA, ("24GB",), "Ada workstation", aliases=("RTX 4500 Ada Generation",)),
    Card("RTX_4000_Ada", NVIDIA, ("20GB",), "Ada workstation", aliases=("RTX 4000 Ada Generation",)),
    Card("RTX_4000_SFF_Ada", NVIDIA, ("20GB",), "Ada small-form-factor workstation"),
    Card("RTX_2000_Ada", NVIDIA, ("16GB",), "Ada entry workstation", aliases=("RTX 2000 Ada Generation",)),
    Card("RTX_A6000", NVIDIA, ("48GB",), "Ampere workstation flagship", aliases=("A6000",)),
    Card("RTX_A5000", NVIDIA, ("24GB",), "Ampere workstation", aliases=("A5000",)),
    Card("RTX_A4500", NVIDIA, ("20GB",), "Ampere workstation", aliases=("A4500",)),
    Card("RTX_A4000", NVIDIA, ("16GB",), "Ampere workstation", aliases=("A4000",)),
    Card("RTX_A2000", NVIDIA, ("12GB", "6GB"), "Ampere entry workstation", aliases=("A2000",)),
    Card("Quadro_RTX_8000", NVIDIA, ("48GB",), "Turing workstation", aliases=("RTX 8000",)),
    Card("Quadro_RTX_6000", NVIDIA, ("24GB",), "Turing workstation"),
    Card("Quadro_RTX_5000", NVIDIA, ("16GB",), "Turing workstation"),
    Card("Quadro_RTX_4000", NVIDIA, ("8GB",), "Turing workstation"),
    # NVIDIA consumer
    Card("RTX_5090", NVIDIA, ("32GB",), "Blackwell consumer flagship"),
    Card("RTX_5080", NVIDIA, ("16GB",), "Blackwell consumer"),
    Card("RTX_5070_Ti", NVIDIA, ("16GB",), "Blackwell consumer"),
    Card("RTX_5070", NVIDIA, ("12GB",), "Blackwell consumer"),
    Card("RTX_5060_Ti", NVIDIA, ("16GB", "8GB"), "Blackwell consumer"),
    Card("RTX_4090", NVIDIA, ("24GB",), "Ada consumer flagship; popular on marketplaces"),
    Card("RTX_4080_SUPER", NVIDIA, ("16GB",), "Ada consumer"),
    Card("RTX_4080", NVIDIA, ("16GB",), "Ada consumer"),
    Card("RTX_4070_Ti_SUPER", NVIDIA, ("16GB",), "Ada consumer"),
    Card("RTX_4070_Ti", NVIDIA, ("12GB",), "Ada consumer"),
    Card("RTX_4070_SUPER", NVIDIA, ("12GB",), "Ada consumer"),
    Card("RTX_4070", NVIDIA, ("12GB",), "Ada consumer"),
    Card("RTX_4060_Ti", NVIDIA, ("16GB", "8GB"), "Ada consumer"),
    Card("RTX_4060", NVIDIA, ("8GB",), "Ada consumer"),
    Card("RTX_3090_Ti", NVIDIA, ("24GB",), "Ampere consumer"),
    Card("RTX_3090", NVIDIA, ("24GB",), "Ampere consumer flagship"),
    Card("RTX_3080_Ti", NVIDIA, ("12GB",), "Ampere consumer"),
    Card("RTX_3080", NVIDIA, ("10GB", "12GB"), "Ampere consumer; the 10GB model is the common one"),
    Card("RTX_3070_Ti", NVIDIA, ("8GB",), "Ampere consumer"),
    Card("RTX_3070", NVIDIA, ("8GB",), "Ampere consumer"),
    Card("RTX_3060_Ti", NVIDIA, ("8GB",), "Ampere consumer"),
    Card("RTX_3060", NVIDIA, ("12GB", "8GB"), "Ampere consumer"),
    Card("RTX_2080_Ti", NVIDIA, ("11GB",), "Turing consumer"),
    Card("RTX_2080", NVIDIA, ("8GB",), "Turing consumer"),
    Card("TITAN_RTX", NVIDIA, ("24GB",), "Turing prosumer"),
    Card("TITAN_V", NVIDIA, ("12GB",), "Volta prosumer"),
    Card("GTX_1080_Ti", NVIDIA, ("11GB",), "Pascal consumer"),
    Card("GTX_1080", NVIDIA, ("8GB",), "Pascal consumer"),
    # AMD
    Card("MI355X", AMD, ("288GB",), "Instinct, CDNA 4; liquid-cooled MI350 series"),
    Card("MI350X", AMD, ("288GB",), "Instinct, CDNA 4; air-cooled MI350 series"),
    Card("MI325X", AMD, ("256GB",), "Instinct, CDNA 3 with HBM3e"),
    Card("MI300X", AMD, ("192GB",), "Instinct, CDNA 3; large-memory inference and training"),
    Card("MI300A", AMD, ("128GB",), "Instinct APU (CPU + GPU, shared HBM3)"),
    Card("MI250X", AMD, ("128GB",), "Instinct, CDNA 2; HPC (Frontier)"),
    Card("MI250", AMD, ("128GB",), "Instinct, CDNA 2"),
    Card("MI210", AMD, ("64GB",), "Instinct, CDNA 2 PCIe"),
    Card("MI100", AMD, ("32GB",), "Instinct, CDNA 1"),
    Card("MI50", AMD, ("32GB", "16GB"), "Instinct, Vega 20"),
    Card("Radeon_Pro_V520", AMD, ("8GB",), "Navi cloud GPU on AWS g4ad", aliases=("V520",)),
    Card("Radeon_Pro_V710", AMD, ("28GB",), "RDNA 3 cloud GPU on Azure", aliases=("V710",)),
    Card("Radeon_Pro_W7900", AMD, ("48GB",), "RDNA 3 workstation", aliases=("W7900",)),
    Card("RX_7900_XTX", AMD, ("24GB",), "RDNA 3 consumer", aliases=("Radeon RX 7900 XTX",)),
    # Google TPUs (memory per chip)
    Card("TPUv2", GOOGLE, ("16GB",), "TPU v2", aliases=("v2", "TPU v2")),
    Card("TPUv3", GOOGLE, ("32GB",), "TPU v3", aliases=("v3",)),
    Card("TPUv4", GOOGLE, ("32GB",), "TPU v4", aliases=("v4",)),
    Card("TPUv5e", GOOGLE, ("16GB",), "TPU v5e; cost-efficient", aliases=("v5e", "v5litepod", "TPU v5 lite")),
    Card("TPUv5p", GOOGLE, ("95GB",), "TPU v5p; performance pods", aliases=("v5p",)),
    Card("TPUv6e", GOOGLE, ("32GB",), "TPU v6e (Trillium)", aliases=("v6e", "Trillium")),
    Card("TPUv7", GOOGLE, ("192GB",), "TPU v7 (Ironwood)", aliases=("v7", "Ironwood")),
    # AWS silicon (memory per chip; runs through the Neuron SDK, not CUDA)
    Card("Trainium1", AWS, ("32GB",), "AWS Trainium, trn1 instances", aliases=("Trainium", "trn1")),
    Card("Trainium2", AWS, ("96GB",), "AWS Trainium2, trn2 instances", aliases=("trn2",)),
    Card("Inferentia1", AWS, ("8GB",), "AWS Inferentia, inf1 instances", aliases=("Inferentia", "inf1")),
    Card("Inferentia2", AWS, ("32GB",), "AWS Inferentia2, inf2 instances", aliases=("inf2",)),
)

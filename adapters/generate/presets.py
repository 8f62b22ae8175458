"""Presets the families share: the GPU hosts of two cloud machine types and
the plain pods that fragment them."""

from __future__ import annotations

from placewise.adapters.generate.config import NodeType, PodShape


def h100(fraction: float = 1.0) -> NodeType:
    """GCP a3-highgpu-8g: 8 H100 80GB, 208 vCPU, 1872 GiB."""
    return NodeType(
        name="h100",
        flavor="h100",
        fraction=fraction,
        gpus=8,
        cpu="208",
        memory="1872Gi",
        labels={
            "node.kubernetes.io/instance-type": "a3-highgpu-8g",
            "cloud.google.com/gke-accelerator": "nvidia-h100-80gb",
            "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        },
    )


def a100(fraction: float = 1.0) -> NodeType:
    """GCP a2-ultragpu-8g: 8 A100 80GB, 96 vCPU, 1360 GiB — CPU-poorer than H100."""
    return NodeType(
        name="a100",
        flavor="a100",
        fraction=fraction,
        gpus=8,
        cpu="96",
        memory="1360Gi",
        labels={
            "node.kubernetes.io/instance-type": "a2-ultragpu-8g",
            "cloud.google.com/gke-accelerator": "nvidia-a100-80gb",
            "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
        },
    )


FRAGMENTING_PODS = (
    PodShape("inference", "inference", 4.0, 1, "12", "96Gi"),
    PodShape("inference-large", "inference", 2.0, 2, "24", "192Gi"),
    PodShape("inference-xl", "inference", 2.0, 3, "40", "300Gi"),
    PodShape("notebook", "notebooks", 1.0, 1, "8", "64Gi"),
    PodShape("etl", "data", 1.5, 0, "48", "256Gi"),
)
"""Plain pods of odd GPU counts and CPU-only ETL that leave awkward holes."""

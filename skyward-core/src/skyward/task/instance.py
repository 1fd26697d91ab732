"""Where a task runs: the node's place in the pool, as `sky.instance_info()` reports it.

The client builds one `InstanceInfo` per node from what the provider returned and ships it to the
worker in the handshake; every task on that worker sees the same value (with `worker` set per
executor slot when a node runs several workers, as under MIG).
"""

from __future__ import annotations

import socket

import attrs


@attrs.frozen
class PeerInfo:
    """One node as its peers see it: index and addresses."""

    node: int
    private_ip: str
    public_ip: str


@attrs.frozen
class AcceleratorInfo:
    """The accelerator on a node, as the spec asked for it."""

    type: str
    count: float = 1
    memory_gb: float | None = None
    is_trainium: bool = False


@attrs.frozen
class NetworkInfo:
    """The interface collective libraries (NCCL, gloo) should bind to."""

    interface: str = "lo"
    bandwidth_gbps: float | None = None


@attrs.frozen(kw_only=True)
class InstanceInfo:
    """This worker's place in the cluster, as `sky.instance_info()` returns it."""

    node: int
    total_nodes: int
    worker: int = 0
    workers_per_node: int = 1
    id: str = ""
    provider: str = "local"
    ip: str = "127.0.0.1"
    private_ip: str = "127.0.0.1"
    network_interface: str = "lo"
    spot: bool = False
    ssh_port: int = 22
    hourly_rate: float = 0.0
    on_demand_rate: float = 0.0
    instance_type: str = ""
    gpu_count: int = 0
    gpu_model: str = ""
    vcpus: int = 0
    memory_gb: float = 0.0
    gpu_vram_gb: int = 0
    accelerators: float = 0
    total_accelerators: float = 0
    head_addr: str = "127.0.0.1"
    head_port: int = 29500
    job_id: str = ""
    peers: tuple[PeerInfo, ...] = ()
    accelerator: AcceleratorInfo | None = None
    network: NetworkInfo = NetworkInfo()

    @property
    def global_worker_index(self) -> int:
        return self.node * self.workers_per_node + self.worker

    @property
    def total_workers(self) -> int:
        return self.total_nodes * self.workers_per_node

    @property
    def is_head(self) -> bool:
        return self.global_worker_index == 0

    @property
    def hostname(self) -> str:
        return socket.gethostname()

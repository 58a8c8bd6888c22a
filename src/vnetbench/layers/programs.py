"""The programs the network layers run, each declared once as a ``Program``: how the lab
finds it, how it tells its version (run.json's ``environment.programs``), what ``vnetbench
doctor`` says of it and which Debian package has it (the machines' checks). A layer names
its own in ``Layer.programs`` (and ``Layer.fallback_programs``, those it runs only where
the kernel lacks something); the link emulator runs in any layer whose links are shaped.
``layers.registry.layer_programs`` lists them all.
"""

from __future__ import annotations

from vnetbench.host.programs import found_by, native, on_path

WG = on_path("wg", "wireguard-tools", purpose="wireguard-tools: required for the wireguard layer")
WIREGUARD_GO = found_by("wireguard-go", "vnetbench.host.features:find_wireguard_go",
                        package="wireguard-go",
                        purpose="userspace WireGuard: the wireguard layer where the kernel has "
                                "no WireGuard module")
TUNNEL = native("vnetbench-tunnel", (), purpose="the userspace layer's forwarder "
                                                "(built by scripts/setup.sh)")
LINKEM = native("vnetbench-linkem", (), purpose="the link emulator: delay, jitter and loss "
                                                "without sch_netem (built by scripts/setup.sh)")


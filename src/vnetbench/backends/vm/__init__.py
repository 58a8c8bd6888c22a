"""The ``vm`` backend: lab nodes as QEMU virtual machines that boot Debian's stock kernel
with the host's own root filesystem shared read-only over 9p (an overlay on tmpfs makes it
writable), one virtio-net NIC per lab TAP device and a private management NIC (QEMU user
networking, forwarded from 127.0.0.1 in QEMU's network namespace) for a small exec agent.

    guest_kernel  find / fetch the guest kernel (``apt-get download`` + ``dpkg-deb -x`` into
                  a cache), build the initramfs (busybox /init, virtio, 9p, overlay modules)
    qemu          ``GuestSpec`` / ``Guest``: the QEMU command line, waiting for the agent,
                  running commands, shutting down
    agent         runs in the guest as its init's last step: serves exec sessions
    client        host side of an exec session (``python3 -m vnetbench.backends.vm.client``)
    accel         ``choose_accel``: a short boot test deciding between KVM and TCG (cached)
"""

"""The ``docker`` backend: nodes as real Docker containers, wired by Docker's own networks.

Every emulated host of the lab (a namespace, as for the ``netns`` backend) runs its own
Docker engine, so docker0, Docker's iptables chains, docker-proxy and the swarm overlay all
live inside the lab's namespaces; the user's own Docker and the root namespace are never
touched. Modules, one job each:

    modes.py    the network modes (``docker-host``, ``docker-bridge``, ...) as layers: what
                each mode asks of the engine and of ``docker run``, and its lab twin
    engine.py   an engine's configuration, its start-up command and the client that talks to it
    steps.py    the docker commands that build a lab's networks and containers (pure, printable)
    image.py    the node image, a root filesystem made from local files (``docker import``)
    runtime.py  carries the steps out, turns containers into lab nodes, and takes it all down
    backend.py  the backend interface (``vnetbench.backends.base``) over the above
"""

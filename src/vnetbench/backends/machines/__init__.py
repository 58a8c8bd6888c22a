"""Real machines driven over OpenSSH: one multiplexed connection per machine (``ssh``), and
the checks that a machine can host a lab before anything is built on it (``checks``)."""

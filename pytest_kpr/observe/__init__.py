"""Every read of the cluster: the Lab (workloads, in-pod clients), the agents, the nodes, batched execs, and the
snapshot of a failed setup."""

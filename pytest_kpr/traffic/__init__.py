"""Code that is the client: the probes (raw SYN, connect, HTTP, the connection holder) and the flow meter."""

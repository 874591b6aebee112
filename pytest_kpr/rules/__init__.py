"""Sourced expectations: which Cilium plane answers what (datapath), kernel floors (kernels), the frontend-ownership
model (lbmodel). Each rule cites cilium/cilium path@commit and the line that decides it."""

"""Pure data model and workloads (no Ryu, Mininet or tc)."""

"""roceinj: the code of tools/inject/sroce_inject.py, by theme.

proto      RoCEv2 constants, the ICRC, transport header builders
wire       the sending veth end: frames, fragments, the answer sniffer, Reply
counters   the target's hw_counters, UDP errors, the real-traffic watch
verbs      the target's PD, CQ, MRs and victim QPs (pyverbs); QP transitions
harness    Session: the case runner and its helpers
directed   the directed cases: directed() runs the tables of directed_valid,
           directed_malformed, directed_responder, directed_completer and
           directed_uc (their context and run_drops: directed_common)
flood      the flood phase
mutate     the mutation phase and its Mutator
icrccheck  selftest and icrc-check
secwire    the sec-wire command's cases (selftests/sec_wire.sh), with their
           helpers and RC/UC pairs in secwire_pair; udpforge its
           unprivileged sender, newlink_race its rdma link add race
"""

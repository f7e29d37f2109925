"""roceinj: the code of tools/inject/sroce_inject.py, by theme.

proto      RoCEv2 constants, the ICRC, transport header builders
wire       the sending veth end: frames, fragments, the answer sniffer, Reply
counters   the target's hw_counters, UDP errors, the real-traffic watch
verbs      the target's PD, CQ, MRs and victim QPs (pyverbs); QP transitions
harness    Session: the case runner and its helpers
directed   the directed cases (tables run by run_drops and loops)
flood      the flood phase
mutate     the mutation phase and its Mutator
icrccheck  selftest and icrc-check
"""

"""The directed cases: every malformed or invalid class, its counter and answer.

The cases are tables, one module per class of attack, run in this order
by directed() (each entry a function of the context Directed: one case,
or a few that share a QP; a table of drops is run by run_drops):

directed_valid      valid packets first: the builders, the ICRC, fields
                    that must not matter
directed_malformed  lengths, truncation, ICRC; QP type, state, keys, QPN:
                    dropped and counted, nothing else
directed_responder  the PSN window, remote access violations (NAKed, the
                    QP to error), valid RDMA checked in memory
directed_completer  responses nobody asked for, a READ and an atomic
                    outstanding, dead peers, an RNR NAK between sequence
                    NAKs, SQD
directed_uc         UC: no NAKs, the message dropped, the QP stays up
"""

from . import (directed_completer, directed_malformed, directed_responder, directed_uc,
               directed_valid)
from .directed_common import EACH, Directed, probe, run_drops      # noqa: F401


CASES = (directed_valid.CASES
         + directed_malformed.CASES
         + directed_responder.CASES
         + directed_completer.CASES
         + directed_uc.CASES
         + [probe("rc", " (end)"), probe("rc6", " (end)")])


def directed(sess):
    d = Directed(sess)
    for run in CASES:
        run(d)

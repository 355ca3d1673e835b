"""An independent, deliberately simple encoder of Kaldi archives for the tests (struct only)."""

import struct

import numpy as np


def fv(values):
    values = np.asarray(values, dtype=np.float32)
    return b"\0BFV \x04" + struct.pack("<i", values.size) + values.astype("<f4").tobytes()


def dv(values):
    values = np.asarray(values, dtype=np.float64)
    return b"\0BDV \x04" + struct.pack("<i", values.size) + values.astype("<f8").tobytes()


def text_vector(values, digits=9):
    return b" [ " + b"".join(b"%.*g " % (digits, v) for v in np.asarray(values).tolist()) + b"]\n"


def record(key, values, kind="fv"):
    """One archive entry ``key`` + ``' '`` + object; kind fv, dv or text."""
    body = {"fv": fv, "dv": dv, "text": text_vector}[kind](values)
    return key.encode() + b" " + body

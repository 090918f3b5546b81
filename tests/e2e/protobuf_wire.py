"""A minimal reader of protobuf wire bytes, for tests that check berth's protobuf answers as
client-go reads them (`k8s\\0` + runtime.Unknown envelopes, length-prefixed watch frames)."""

MAGIC = b"k8s\x00"


def pb_varint(data, i):
    """The varint at `data[i:]` and the index after it."""
    n, shift = 0, 0
    while True:
        b = data[i]
        i += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return n, i


def pb_fields(data):
    """(field number, value) of one message in order: bytes for length-delimited fields,
    ints for varints."""
    fields, i = [], 0
    while i < len(data):
        key, i = pb_varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = pb_varint(data, i)
        elif wire == 2:
            size, i = pb_varint(data, i)
            value, i = data[i:i + size], i + size
        elif wire == 1:
            value, i = data[i:i + 8], i + 8
        elif wire == 5:
            value, i = data[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {wire}")
        fields.append((number, value))
    return fields


def pb_get(data, number, default=b""):
    """The first value of field `number` (or `default`)."""
    return next((v for n, v in pb_fields(data) if n == number), default)


def pb_all(data, number):
    """Every value of (repeated) field `number`."""
    return [v for n, v in pb_fields(data) if n == number]


def unknown(body):
    """`k8s\\0` + runtime.Unknown: (apiVersion, kind, raw)."""
    assert body.startswith(MAGIC), body[:16]
    envelope = body[len(MAGIC):]
    type_meta = pb_get(envelope, 1)
    return pb_get(type_meta, 1).decode(), pb_get(type_meta, 2).decode(), pb_get(envelope, 2)

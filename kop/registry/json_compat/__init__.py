"""Whether a JSON Schema reads everything another one accepts: the compatibility check of
JSON Schema subjects, as Confluent's Schema Registry makes it. BACKWARD asks
why_cannot_read(reader=new, writer=old), FORWARD why_cannot_read(reader=old, writer=new).

Why it is written so: the registry must never let in an evolution after which a reader
rejects data that was, or will be, written under the writer's schema. So the check is
conservative: it may refuse a change that is in fact compatible, never the other way
round. It models the keywords evolutions touch (type, enum and const, the number,
string, array and object keywords, format, $ref, allOf, anyOf, oneOf); every other
validation keyword (not, if/then/else, patternProperties, dependencies, propertyNames,
contains, prefixItems, additionalItems...) must be equal on both sides, or it is
refused, as is one that only the writer has where a property or an item is read. Keys
that are no validation keyword (title, description, default, examples, $comment,
readOnly, vendor keys such as Kafka Connect's "connect.index"...) are annotations,
which validators ignore: they never matter, and schemas equal but for them are equal.

Where Confluent's diff accepts more, kop refuses what it cannot prove:
- a oneOf in the reader reads the writer only when the writer's data cannot match two
  of its branches: branches of other types or consts, a required property the other
  branch forbids, or a branch no wider than one of the writer's own oneOf (Confluent
  does not look for overlapping branches at all);
- siblings of $ref count (2019-09 and later) and are ignored (draft-07 and earlier)
  alike: what holds under both readings is accepted;
- both documents must declare the same $schema, as keywords change meaning between
  drafts (draft-04's boolean exclusiveMinimum, its lack of const); $ref is followed
  inside the document only, by JSON pointer, and not in one that embeds another $id;
  a $ref to another document only to the same document;
- unevaluatedProperties, unevaluatedItems, $recursiveRef and $dynamicRef depend on the
  whole schema around them: a schema that holds one must not change at all.

Messages start with the JSON pointer of where the reader fails (into the reader's schema;
after a $ref, into its target) and say what changed from the writer's schema to the
reader's ("removed": the writer has it, the reader does not).

The work is bounded for hostile documents (a client sends both): at most 64 levels of
nesting, 50,000 comparisons per request (over all the versions it is checked against)
and 1,024 alternatives of a writer's anyOf/oneOf; past them the change is refused.
"""

from __future__ import annotations

from kop.registry.json_compat.budget import Abort, Budget
from kop.registry.json_compat.comparison import Comparison
from kop.registry.json_compat.documents import Doc
from kop.registry.json_compat.values import Texts, one_line, strictly_equal, trivial

__all__ = ["Budget", "why_cannot_read"]


def why_cannot_read(reader: object, writer: object, budget: Budget | None = None) -> str | None:
    """None when every JSON instance valid under `writer` is valid under `reader`
    (the reader can read all data written with the writer's schema); else one line
    saying why not, naming the JSON pointer path where it fails (e.g.
    "#/properties/age: type number narrowed to integer").

    `reader` and `writer` are parsed JSON Schema documents (as json.loads gives them).
    Never raises. oneOf is checked for overlapping branches only as far as the module
    docstring says; a change kop cannot prove compatible is refused. `budget`: the
    comparisons left to the whole request (one per call when None), so that a subject's
    long history does not multiply the work a client may ask for."""
    if strictly_equal(reader, writer):
        return None
    keys = Texts()
    try:
        return one_line(_check(reader, writer, keys, budget or Budget()))
    except Abort as abort:
        return one_line(abort.reason)
    except RecursionError:
        return "#: the schemas are nested too deeply to compare"


def _check(reader: object, writer: object, keys: Texts, budget: Budget) -> str | None:
    mine, theirs = Doc(reader), Doc(writer)
    accepts_all = reader is True or (isinstance(reader, dict) and trivial(reader))
    if mine.dialect != theirs.dialect and not accepts_all and writer is not False:
        return (
            f"#: $schema changed from {theirs.dialect or 'none'} to {mine.dialect or 'none'}: "
            "kop does not compare schemas of different JSON Schema versions"
        )
    comparison = Comparison(mine, theirs, budget, keys)
    return comparison.run(mine.root, theirs.root, "#", 0, 0)

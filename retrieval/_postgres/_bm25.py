"""BM25 in SQL: one statement per ranking, the query's weights computed beside the rows.

The folder index's BM25 (Lucene's variant, ``_lexical._bm25``): for each query term t with
count n_t in the query, ``idf(t) = ln(1 + (N - df_t + 0.5) / (df_t + 0.5))`` (Robertson &
Zaragoza 2009, eq. 3.3, with Lucene's ``1 +``) and a chunk's score is the sum over the
terms it holds of ``n_t · idf(t) · tf / (tf + k1 (1 - b + b · dl / avgdl))``. ``N`` and
``avgdl`` come from the knowledge base's row and ``df`` from its terms table *in the same
statement* as the rows, so the score is that of the one version the statement sees
(no second round trip for the document frequencies, and nothing cached that a writer
could make stale).

Two sources of term frequencies:

- the postings table (``_schema``): the query's terms' postings read from the index alone
  and summed in one aggregation. On SciFact (23,170 chunks, 300 queries) p50 6.6 ms where
  reading every matching chunk's ``tsvector`` took 55 (``bench_pg_quality.py --section
  lexical``);
- tables of kbgraph 0.1, which have none until their next index run adds it: each
  matching chunk's ``tsvector``, cut to the query's lexemes in C (``ts_filter``) first.
"""

from __future__ import annotations

from psycopg import sql

from .._lexical import DEFAULT_B, DEFAULT_K1
from ._lexical import GLUED_DISCOUNT_SQL, tsquery_literal
from ._schema import VERSION_KEY, Tables

KB = (
    "kb AS MATERIALIZED (SELECT " + VERSION_KEY + " AS version, n, %(k1)s * (1 - %(b)s) AS c, "
    "%(k1)s * %(b)s / avgdl AS k FROM (SELECT version, n_docs::float8 AS n, CASE WHEN "
    "n_docs > 0 AND total_len > 0 THEN total_len::float8 / n_docs ELSE 1.0::float8 END "
    "AS avgdl FROM kbgraph_kbs WHERE id = %(kb)s) s)"
)
"""The version every statement reports, and BM25's collection statistics: the length
normalisation ``k1 (1 - b + b · dl / avgdl)`` as ``c + k · dl``, so a posting costs the
aggregation four arithmetic operations instead of seven."""

_WEIGHTS = (
    "q AS MATERIALIZED (SELECT t.lexeme, q.n * ln(1 + (kb.n - t.df::float8 + 0.5) / "
    "(t.df::float8 + 0.5)) AS w FROM unnest(%(terms)s::text[], %(counts)s::float8[]) "
    "AS q(lexeme, n) JOIN {terms} t ON t.lexeme = q.lexeme CROSS JOIN kb)"
)
_TF = "{tf} / ({tf} + kb.c + kb.k * {dl})"


def params(kb_id: int, counts: dict[str, float]) -> dict[str, object]:
    """The parameters of every BM25 statement: the query's terms and their counts."""
    return {
        "kb": kb_id,
        "terms": list(counts),
        "counts": list(counts.values()),
        "k1": float(DEFAULT_K1),
        "b": float(DEFAULT_B),
        "tsq": tsquery_literal(list(counts)),  # the older tables' GIN match
    }


def _scored(tables: Tables, postings: bool, where: sql.Composable) -> sql.Composed:
    """``rid, score`` of the rows sharing a term with the query that ``where`` keeps."""
    if postings:
        tf = sql.SQL(_TF.format(tf="p.tf", dl="p.dl"))
        return sql.SQL(
            "SELECT p.rid, sum(q.w * {tf}) AS score FROM q JOIN {p} p ON p.lexeme = q.lexeme "
            "CROSS JOIN kb WHERE {where} GROUP BY p.rid"
        ).format(tf=tf, p=tables.postings, where=where)
    # Each match's tsvector cut to the query's lexemes in C (setweight marks them 'A',
    # ts_filter keeps those); positions labelled 'C' (glued identifier parts) counted apart.
    tf = sql.SQL(_TF.format(tf="t.tf", dl="c.dl"))
    return sql.SQL(
        "SELECT c.rid, sum(q.w * {tf}) AS score FROM {c} c CROSS JOIN kb "
        "CROSS JOIN LATERAL (SELECT u.lexeme, cardinality(u.positions)::float8 - "
        + GLUED_DISCOUNT_SQL
        + " * coalesce((SELECT cardinality(g.positions) FROM unnest(ts_filter(setweight("
        "ts_filter(c.lexemes, '{{c}}'), 'A', %(terms)s::text[]), '{{a}}')) g "
        "WHERE g.lexeme = u.lexeme), 0) AS tf "
        "FROM unnest(ts_filter(setweight(c.lexemes, 'A', %(terms)s::text[]), '{{a}}')) u) t "
        "JOIN q ON q.lexeme = t.lexeme WHERE c.lexemes @@ %(tsq)s::tsquery AND {where} "
        "GROUP BY c.rid"
    ).format(tf=tf, c=tables.chunks, where=where)


def top_sql(
    tables: Tables, postings: bool, filtered: bool, columns: sql.Composable
) -> sql.Composed:
    """The best ``%(n)s`` rows (ties by rid) with ``columns`` of each (alias ``c``) and
    the version: one statement. ``filtered``: only rows of ``%(allowed)s`` sources."""
    if not filtered:
        where: sql.Composable = sql.SQL("TRUE")
    elif postings:
        where = sql.SQL(
            "EXISTS (SELECT 1 FROM {} f WHERE f.rid = p.rid AND f.source = ANY(%(allowed)s))"
        ).format(tables.chunks)
    else:
        where = sql.SQL("c.source = ANY(%(allowed)s)")
    return sql.SQL(
        "WITH " + KB + ", " + _WEIGHTS + ", s AS ({scored} ORDER BY score DESC, rid "
        "LIMIT %(n)s) SELECT s.rid, s.score, kb.version, {columns} FROM s "
        "JOIN {c} c ON c.rid = s.rid CROSS JOIN kb ORDER BY s.score DESC, s.rid"
    ).format(
        terms=tables.terms,
        scored=_scored(tables, postings, where),
        columns=columns,
        c=tables.chunks,
    )


def exact_sql(tables: Tables, postings: bool) -> sql.Composed:
    """``rid, score, version`` of the rows of ``%(keys)s`` that share a term with the query."""
    where = sql.SQL("p.rid = ANY(%(keys)s)" if postings else "c.rid = ANY(%(keys)s)")
    return sql.SQL(
        "WITH " + KB + ", " + _WEIGHTS + " SELECT s.rid, s.score, kb.version FROM ({scored}) s "
        "CROSS JOIN kb"
    ).format(terms=tables.terms, scored=_scored(tables, postings, where))


__all__ = ["KB", "exact_sql", "params", "top_sql"]

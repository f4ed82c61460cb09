"""``kbgraph stats --validate`` for the PostgreSQL store: the rows agree with the files
table, the document frequencies and counts with the rows, every vector has unit length."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

from kbgraph.errors import IndexCorruptError

from .._storage import UNIT_NORM_TOLERANCE, IndexMeta
from ._schema import Tables


def validate(conn: psycopg.Connection[Any], tables: Tables, meta: IndexMeta, where: str) -> None:
    def one(query: sql.Composed, *params: Any) -> Any:
        row = conn.execute(query, params).fetchone()
        return row[0] if row else None

    c, f, t = tables.chunks, tables.files, tables.terms
    problems: list[str] = []
    rows = int(one(sql.SQL("SELECT count(*) FROM {}").format(c)))
    if rows != meta.chunk_count:
        problems.append(f"{rows} chunk rows but the files table counts {meta.chunk_count}")
    uneven = one(
        sql.SQL(
            "SELECT count(*) FROM (SELECT f.source FROM {f} f LEFT JOIN {c} c USING (source) "
            "GROUP BY f.source, f.chunk_count HAVING count(c.rid) <> f.chunk_count "
            "OR coalesce(max(c.ord), -1) <> f.chunk_count - 1) x"
        ).format(f=f, c=c)
    )
    if uneven:
        problems.append(f"{uneven} files whose rows do not match their chunk count")
    stats = conn.execute(
        sql.SQL(
            "SELECT k.n_docs = x.n AND k.total_len = x.len FROM kbgraph_kbs k, "
            "(SELECT count(*) AS n, coalesce(sum(dl), 0) AS len FROM {}) x WHERE k.id = %s"
        ).format(c),
        (tables.kb_id,),
    ).fetchone()
    if not stats or not stats[0]:
        problems.append("the document count or total length of the knowledge base is stale")
    wrong_df = one(
        sql.SQL(
            "SELECT count(*) FROM (SELECT u.lexeme, count(*) AS n FROM {c}, unnest(lexemes) u "
            "GROUP BY u.lexeme) r FULL JOIN {t} t USING (lexeme) "
            "WHERE r.n IS DISTINCT FROM t.df"
        ).format(c=c, t=t)
    )
    if wrong_df:
        problems.append(f"{wrong_df} terms with a wrong document frequency")
    if meta.embedding is not None:
        bad = one(
            sql.SQL(
                "SELECT count(*) FROM {} WHERE embedding IS NOT NULL AND "
                "abs(vector_norm(embedding) - 1) > %s"
            ).format(c),
            UNIT_NORM_TOLERANCE,  # the bound of sound_vectors, as in the folder index
        )
        if bad:
            problems.append(f"{bad} vectors whose length is not 1")
        missing = int(one(sql.SQL("SELECT count(*) FROM {} WHERE embedding IS NULL").format(c)))
        if missing != len(meta.failed_embeddings):
            problems.append(
                f"{missing} rows without a vector but {len(meta.failed_embeddings)} recorded "
                "as failed"
            )
    if problems:
        raise IndexCorruptError(
            f"the index in {where} is inconsistent ({'; '.join(problems)}); re-index with "
            "`kbgraph index FOLDER --store URL --rebuild`"
        )


__all__ = ["validate"]

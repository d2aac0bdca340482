//! MJoin's join operator (Skipper §4.1): an n-ary equi-join over the objects
//! MJoin holds, run for the subplans an arriving object completes.
//!
//! Each held object keeps its rows (decoded, filtered and projected as the
//! query's scan of that relation asks) and, per join key of its relation, the
//! keys in arrow's row format. Per relation and key, one hash index covers
//! every held object, so an arriving object finds its partners in all held
//! objects of a neighbour with one probe per row, instead of one probe per
//! (row, object) — the work of a subplan is then proportional to its rows,
//! like a symmetric hash join's. Each result row remembers which object each
//! of its parts came from; rows of subplans that are not pending (already run
//! in an earlier cycle, before an eviction) are dropped, so every subplan's
//! rows come out exactly once.
//!
//! The operator is stateless about progress: the state manager (`exec.rs`)
//! says which object arrived and which subplans are pending.

use std::hash::BuildHasher;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef};
use datafusion::arrow::compute::interleave;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::arrow::row::{RowConverter, Rows, SortField};
use datafusion::common::{DataFusionError, HashMap, Result};
use datafusion::physical_expr::PhysicalExpr;

/// Rows per output batch.
const OUT_ROWS: usize = 8192;

/// An equi-join condition between two relations: key `ka` of relation `a`
/// equals key `kb` of relation `b` (each key a list of expressions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Edge {
    pub a: usize,
    pub ka: usize,
    pub b: usize,
    pub kb: usize,
}

/// The end of a chain.
const NONE: u32 = u32::MAX;

/// One relation's index on one key over all its held objects: per key hash,
/// a chain of (slot, row) entries. No allocation per key; an eviction
/// rebuilds the relation's index from what is still held (the rows of a
/// cache that evicts often are few).
#[derive(Default)]
struct KeyIndex {
    heads: HashMap<u64, u32>,
    /// (slot, row, next entry).
    entries: Vec<(u32, u32, u32)>,
}

impl KeyIndex {
    fn insert(&mut self, hash: u64, slot: u32, row: u32) {
        let at = self.entries.len() as u32;
        let next = self.heads.insert(hash, at).unwrap_or(NONE);
        self.entries.push((slot, row, next));
    }

    fn clear(&mut self) {
        self.heads.clear();
        self.entries.clear();
    }

    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// One held object.
struct Held {
    object: usize,
    batch: RecordBatch,
    /// Per key of the relation: the encoded keys and whether each row's key
    /// has no NULL (a NULL never joins).
    keys: Vec<(Rows, Vec<bool>)>,
    /// Per key: each row's key hash.
    hashes: Vec<Vec<u64>>,
}

/// Where a relation's rows are: its held objects in slots, and its indexes.
struct Relation {
    keys: Vec<Vec<Arc<dyn PhysicalExpr>>>,
    converters: Vec<Option<RowConverter>>,
    slots: Vec<Option<Held>>,
    /// Per key: key hash → chain of (slot, row).
    index: Vec<KeyIndex>,
    columns: usize,
}

/// How to extend partial rows by one relation.
#[derive(Clone, Debug)]
struct Step {
    relation: usize,
    /// The edge probed (from a relation already joined), or none: a cross
    /// product with every held row.
    probe: Option<Edge>,
    /// Further edges to joined relations, checked on each candidate.
    checks: Vec<Edge>,
}

/// The n-ary join over held objects (see the module docs).
pub struct Joiner {
    schema: SchemaRef,
    hasher: std::collections::hash_map::RandomState,
    relations: Vec<Relation>,
    /// Per starting relation, the order of the others.
    plans: Vec<Vec<Step>>,
}

/// `e` seen from relation `from`: (other relation, key on `from`, key on other).
fn oriented(e: &Edge, from: usize) -> Edge {
    if e.a == from {
        *e
    } else {
        Edge {
            a: e.b,
            ka: e.kb,
            b: e.a,
            kb: e.ka,
        }
    }
}

impl Joiner {
    /// A joiner producing `schema` (the relations' columns, relation after
    /// relation); `keys[r]` are relation r's join keys, `edges` the
    /// conditions between them, `columns[r]` its column count.
    pub fn new(
        schema: SchemaRef,
        keys: Vec<Vec<Vec<Arc<dyn PhysicalExpr>>>>,
        columns: Vec<usize>,
        edges: Vec<Edge>,
    ) -> Joiner {
        let n = keys.len();
        let relations = keys
            .into_iter()
            .zip(columns)
            .map(|(k, columns)| Relation {
                converters: (0..k.len()).map(|_| None).collect(),
                index: (0..k.len()).map(|_| KeyIndex::default()).collect(),
                keys: k,
                slots: Vec::new(),
                columns,
            })
            .collect();
        let plans = (0..n).map(|r0| plan_from(r0, n, &edges)).collect();
        Joiner {
            schema,
            hasher: Default::default(),
            relations,
            plans,
        }
    }

    /// Holds `object` of relation `r` with its rows `batch`.
    pub fn add(&mut self, r: usize, object: usize, batch: RecordBatch) -> Result<()> {
        let hasher = self.hasher.clone();
        let rel = &mut self.relations[r];
        let mut keys = Vec::with_capacity(rel.keys.len());
        for (k, exprs) in rel.keys.iter().enumerate() {
            let arrays: Vec<ArrayRef> = exprs
                .iter()
                .map(|e| e.evaluate(&batch)?.into_array(batch.num_rows()))
                .collect::<Result<_>>()?;
            if rel.converters[k].is_none() {
                rel.converters[k] = Some(RowConverter::new(
                    arrays
                        .iter()
                        .map(|a| SortField::new(a.data_type().clone()))
                        .collect(),
                )?);
            }
            let rows = rel.converters[k]
                .as_ref()
                .expect("made above")
                .convert_columns(&arrays)?;
            let valid: Vec<bool> = (0..batch.num_rows())
                .map(|i| arrays.iter().all(|a| a.is_valid(i)))
                .collect();
            keys.push((rows, valid));
        }
        let slot = match rel.slots.iter().position(Option::is_none) {
            Some(s) => s,
            None => {
                rel.slots.push(None);
                rel.slots.len() - 1
            }
        };
        let mut hashes = Vec::with_capacity(keys.len());
        for (k, (rows, valid)) in keys.iter().enumerate() {
            let h: Vec<u64> = (0..rows.num_rows())
                .map(|i| hasher.hash_one(rows.row(i).as_ref()))
                .collect();
            let index = &mut rel.index[k];
            for (i, ok) in valid.iter().enumerate() {
                if *ok {
                    index.insert(h[i], slot as u32, i as u32);
                }
            }
            hashes.push(h);
        }
        rel.slots[slot] = Some(Held {
            object,
            batch,
            keys,
            hashes,
        });
        Ok(())
    }

    /// Drops `object` of relation `r` and its index entries.
    pub fn remove(&mut self, r: usize, object: usize) {
        let rel = &mut self.relations[r];
        let Some(slot) = rel
            .slots
            .iter()
            .position(|h| h.as_ref().is_some_and(|h| h.object == object))
        else {
            return;
        };
        rel.slots[slot] = None;
        for (k, index) in rel.index.iter_mut().enumerate() {
            index.clear();
            for (s, h) in rel.slots.iter().enumerate() {
                let Some(h) = h else { continue };
                for (i, ok) in h.keys[k].1.iter().enumerate() {
                    if *ok {
                        index.insert(h.hashes[k][i], s as u32, i as u32);
                    }
                }
            }
        }
    }

    fn held(&self, r: usize, slot: u32) -> &Held {
        self.relations[r].slots[slot as usize]
            .as_ref()
            .expect("index entries point at held objects")
    }

    /// Joins `object` of relation `r0` (held) with every held object of the
    /// other relations; rows whose combination of objects `pending` accepts
    /// go to `out` in batches. Returns the rows produced.
    pub fn join(
        &self,
        r0: usize,
        object: usize,
        pending: &dyn Fn(&[usize]) -> bool,
        out: &mut dyn FnMut(RecordBatch) -> Result<()>,
    ) -> Result<u64> {
        let n = self.relations.len();
        let start = self.relations[r0]
            .slots
            .iter()
            .position(|h| h.as_ref().is_some_and(|h| h.object == object))
            .ok_or_else(|| {
                DataFusionError::Internal(format!(
                    "MJoin: object {object} of relation {r0} is not held"
                ))
            })? as u32;
        let rows = self.held(r0, start).batch.num_rows();
        let mut produced = 0u64;
        // Partial rows: per relation, (slot, row); u32::MAX = not yet joined.
        let mut chunk_start = 0;
        while chunk_start < rows {
            let chunk_end = (chunk_start + OUT_ROWS).min(rows);
            let mut parts: Vec<Vec<(u32, u32)>> = vec![Vec::new(); n];
            parts[r0] = (chunk_start..chunk_end)
                .map(|i| (start, i as u32))
                .collect();
            let mut len = parts[r0].len();
            for step in &self.plans[r0] {
                let mut next: Vec<Vec<(u32, u32)>> = vec![Vec::new(); n];
                for t in 0..len {
                    let mut emit = |m: (u32, u32)| {
                        if step.checks.iter().all(|c| self.keys_equal(&parts, t, c, m)) {
                            for (r, p) in parts.iter().enumerate() {
                                if !p.is_empty() {
                                    next[r].push(p[t]);
                                }
                            }
                            next[step.relation].push(m);
                        }
                    };
                    match &step.probe {
                        Some(e) => {
                            let (slot, row) = parts[e.a][t];
                            let from = self.held(e.a, slot);
                            let (keys, valid) = &from.keys[e.ka];
                            if !valid[row as usize] {
                                continue;
                            }
                            let key = keys.row(row as usize);
                            let index = &self.relations[e.b].index[e.kb];
                            let mut at = index
                                .heads
                                .get(&from.hashes[e.ka][row as usize])
                                .copied()
                                .unwrap_or(NONE);
                            while at != NONE {
                                let (s, r, next) = index.entries[at as usize];
                                if self.held(e.b, s).keys[e.kb].0.row(r as usize) == key {
                                    emit((s, r));
                                }
                                at = next;
                            }
                        }
                        None => {
                            for (s, h) in self.relations[step.relation].slots.iter().enumerate() {
                                if let Some(h) = h {
                                    for i in 0..h.batch.num_rows() {
                                        emit((s as u32, i as u32));
                                    }
                                }
                            }
                        }
                    }
                }
                len = next[step.relation].len();
                parts = next;
                if len == 0 {
                    break;
                }
            }
            if len > 0 {
                produced += self.emit(&parts, len, pending, out)?;
            }
            chunk_start = chunk_end;
        }
        Ok(produced)
    }

    /// Whether the candidate `m` of `c.b` matches partial row `t` on edge `c`.
    fn keys_equal(&self, parts: &[Vec<(u32, u32)>], t: usize, c: &Edge, m: (u32, u32)) -> bool {
        let (sa, ra) = parts[c.a][t];
        let (ka, va) = &self.held(c.a, sa).keys[c.ka];
        let (kb, vb) = &self.held(c.b, m.0).keys[c.kb];
        va[ra as usize] && vb[m.1 as usize] && ka.row(ra as usize) == kb.row(m.1 as usize)
    }

    /// Builds the output batches of the pending rows among `len` full rows.
    fn emit(
        &self,
        parts: &[Vec<(u32, u32)>],
        len: usize,
        pending: &dyn Fn(&[usize]) -> bool,
        out: &mut dyn FnMut(RecordBatch) -> Result<()>,
    ) -> Result<u64> {
        let n = self.relations.len();
        let mut combo = vec![0usize; n];
        let keep: Vec<usize> = (0..len)
            .filter(|&t| {
                for (r, c) in combo.iter_mut().enumerate() {
                    *c = self.held(r, parts[r][t].0).object;
                }
                pending(&combo)
            })
            .collect();
        for chunk in keep.chunks(OUT_ROWS) {
            let mut columns: Vec<ArrayRef> = Vec::with_capacity(self.schema.fields().len());
            for (r, rel) in self.relations.iter().enumerate() {
                // The slots this chunk uses, as positions in `sources`.
                let mut pos = vec![usize::MAX; rel.slots.len()];
                let mut used: Vec<&Held> = Vec::new();
                let idx: Vec<(usize, usize)> = chunk
                    .iter()
                    .map(|&t| {
                        let (s, row) = parts[r][t];
                        if pos[s as usize] == usize::MAX {
                            pos[s as usize] = used.len();
                            used.push(self.held(r, s));
                        }
                        (pos[s as usize], row as usize)
                    })
                    .collect();
                for c in 0..rel.columns {
                    let sources: Vec<&dyn Array> =
                        used.iter().map(|h| h.batch.column(c).as_ref()).collect();
                    columns.push(interleave(&sources, &idx)?);
                }
            }
            // A join whose relations project no column (`count(*)`) has
            // rows but no columns: the batch says how many.
            out(RecordBatch::try_new_with_options(
                self.schema.clone(),
                columns,
                &RecordBatchOptions::new().with_row_count(Some(chunk.len())),
            )?)?;
        }
        Ok(keep.len() as u64)
    }
}

/// The order in which the other relations join a row of `r0`: breadth first
/// over the edges; relations without an edge to the joined ones come last,
/// as cross products.
fn plan_from(r0: usize, n: usize, edges: &[Edge]) -> Vec<Step> {
    let mut joined = vec![false; n];
    joined[r0] = true;
    let mut steps = Vec::new();
    for _ in 1..n {
        let next = (0..n).filter(|&r| !joined[r]).find(|&r| {
            edges
                .iter()
                .any(|e| (e.a == r && joined[e.b]) || (e.b == r && joined[e.a]))
        });
        let (r, connected) = match next {
            Some(r) => (r, true),
            None => ((0..n).find(|&r| !joined[r]).expect("one is left"), false),
        };
        let mut links: Vec<Edge> = edges
            .iter()
            .filter(|e| (e.a == r && joined[e.b]) || (e.b == r && joined[e.a]))
            .map(|e| {
                let o = oriented(e, r);
                // Seen from the joined side: a = joined, b = r.
                Edge {
                    a: o.b,
                    ka: o.kb,
                    b: r,
                    kb: o.ka,
                }
            })
            .collect();
        let probe = if connected {
            Some(links.remove(0))
        } else {
            None
        };
        steps.push(Step {
            relation: r,
            probe,
            checks: links,
        });
        joined[r] = true;
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Int64Array, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::physical_expr::expressions::Column;

    fn batch(schema: &SchemaRef, ids: &[Option<i64>], names: &[&str]) -> RecordBatch {
        RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from(ids.to_vec())),
                Arc::new(StringArray::from(names.to_vec())),
            ],
        )
        .unwrap()
    }

    /// Relations that project no column (`SELECT count(*) FROM a, b`): the
    /// rows come out as batches without columns that say how many.
    #[test]
    fn relations_without_columns_join_into_counted_rows() {
        let empty = Arc::new(Schema::empty());
        let rows = |n: usize| {
            RecordBatch::try_new_with_options(
                empty.clone(),
                vec![],
                &RecordBatchOptions::new().with_row_count(Some(n)),
            )
            .unwrap()
        };
        let mut j = Joiner::new(empty.clone(), vec![vec![], vec![]], vec![0, 0], vec![]);
        j.add(0, 0, rows(3)).unwrap();
        j.add(1, 0, rows(2)).unwrap();
        let mut out = Vec::new();
        let n = j
            .join(1, 0, &|_: &[usize]| true, &mut |b| {
                out.push(b);
                Ok(())
            })
            .unwrap();
        assert_eq!(n, 6);
        assert_eq!(out.iter().map(|b| b.num_rows()).sum::<usize>(), 6);
        assert!(out.iter().all(|b| b.num_columns() == 0));
    }

    /// Three relations in a chain A.k = B.k, B.v = C.v (C's key is its
    /// second column), objects arriving and leaving: the rows are the nested
    /// loop's, each exactly once, NULL keys never joining.
    #[test]
    fn joins_three_relations_like_a_nested_loop_and_respects_pending() {
        let s = |p: &str| {
            Arc::new(Schema::new(vec![
                Field::new(format!("{p}k"), DataType::Int64, true),
                Field::new(format!("{p}v"), DataType::Utf8, true),
            ]))
        };
        let (sa, sb, sc) = (s("a"), s("b"), s("c"));
        let out_schema = Arc::new(Schema::new(
            [&sa, &sb, &sc]
                .iter()
                .flat_map(|x| x.fields().iter().map(|f| f.as_ref().clone()))
                .collect::<Vec<_>>(),
        ));
        let col =
            |i: usize, name: &str| -> Arc<dyn PhysicalExpr> { Arc::new(Column::new(name, i)) };
        let keys = vec![
            vec![vec![col(0, "ak")]],
            vec![vec![col(0, "bk")], vec![col(1, "bv")]],
            vec![vec![col(1, "cv")]],
        ];
        let edges = vec![
            Edge {
                a: 0,
                ka: 0,
                b: 1,
                kb: 0,
            },
            Edge {
                a: 2,
                ka: 0,
                b: 1,
                kb: 1,
            },
        ];
        let mut j = Joiner::new(out_schema, keys, vec![2, 2, 2], edges);
        let a0 = batch(&sa, &[Some(1), Some(2), None], &["x", "y", "z"]);
        let a1 = batch(&sa, &[Some(1)], &["w"]);
        let b0 = batch(
            &sb,
            &[Some(1), Some(1), Some(2), None],
            &["p", "q", "p", "p"],
        );
        let c0 = batch(&sc, &[Some(9), Some(8)], &["p", "q"]);
        j.add(0, 0, a0).unwrap();
        j.add(1, 0, b0).unwrap();
        let mut rows = Vec::new();
        let all = |_: &[usize]| true;
        // C not held yet: nothing.
        let n = j
            .join(0, 0, &all, &mut |b| {
                rows.push(b);
                Ok(())
            })
            .unwrap();
        assert_eq!(n, 0);
        j.add(2, 0, c0).unwrap();
        let n = j
            .join(2, 0, &all, &mut |b| {
                rows.push(b);
                Ok(())
            })
            .unwrap();
        // a=1 joins b (1,p),(1,q); a=2 joins (2,p); each b matches one c.
        assert_eq!(n, 3);
        let text = datafusion::arrow::util::pretty::pretty_format_batches(&rows)
            .unwrap()
            .to_string();
        assert!(text.contains("| 1  | x  | 1  | q  | 8  | q  |"), "{text}");
        assert!(text.contains("| 2  | y  | 2  | p  | 9  | p  |"), "{text}");
        // A second object of A: only combinations accepted by `pending`.
        j.add(0, 1, a1).unwrap();
        let mut more = 0;
        let n = j
            .join(0, 1, &|c: &[usize]| c[1] == 0 && c[0] == 1, &mut |b| {
                more += b.num_rows();
                Ok(())
            })
            .unwrap();
        assert_eq!((n, more), (2, 2));
        let n = j.join(0, 1, &|_: &[usize]| false, &mut |_| Ok(())).unwrap();
        assert_eq!(n, 0);
        // Evicting B leaves nothing to join with.
        j.remove(1, 0);
        assert_eq!(j.join(0, 1, &all, &mut |_| Ok(())).unwrap(), 0);
        assert!(j.relations[1].index.iter().all(|i| i.is_empty()));
    }
}

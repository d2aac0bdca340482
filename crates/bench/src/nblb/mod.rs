//! No Bits Left Behind (CIDR 2011): the index cache in the leaves' free
//! space (§2.1) and the space wasted by cold tuples among hot ones (§3.1,
//! §4.2).
//!
//! - [`index_cache`]: Fig. 2a (hit rate against capacity, beside the
//!   [`cache_reference`] caches), the fill sweep and Fig. 2c;
//!   [`index_cache_2b`]: Fig. 2b, lookup throughput against the cache's and
//!   the pool's hit rates; [`index_cache_wiki`]: the Wikipedia `page`
//!   example beside PostgreSQL's covering index (`strata bench index-cache`);
//! - [`waste_fig3`]: Fig. 3, a lookup's cost with the hot tuples clustered or
//!   partitioned; [`waste_ids`]: the same with semantic ids;
//!   [`waste_split`]: with the table split (`strata bench waste`).

pub mod cache_reference;
pub mod index_cache;
pub mod index_cache_2b;
pub mod index_cache_2b_figure;
pub mod index_cache_2c;
pub mod index_cache_wiki;
pub mod index_cache_wiki_run;
pub mod waste_fig3;
pub mod waste_ids;
pub mod waste_split;
pub mod waste_states;

//! Result rows, their CSV files, and the aggregation of repeated runs.
//!
//! Every experiment writes `results/<experiment>/<figure>.csv` with the same
//! leading columns ([`STANDARD_COLUMNS`]) so that one script, notebook or plot
//! helper can read any of them; figure-specific counters go into
//! [`ResultRow::extra`] and become additional columns after the standard ones.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::Path;

use serde::Serialize;

use crate::report::plot::Series;

/// The columns every result CSV starts with, in this order.
pub const STANDARD_COLUMNS: [&str; 9] = [
    "figure",
    "device",
    "variant",
    "x",
    "wall_ms",
    "modeled_ms",
    "pages_read",
    "io_requests",
    "rows_out",
];

/// One measured point: one `variant` (e.g. "smooth scan") of one `figure`
/// on one `device` at one `x` (e.g. selectivity in percent).
///
/// `x` is numeric so that rows sort and plot without parsing; a figure whose
/// x axis is categorical uses the category's index and may name it in an
/// extra column (e.g. `x_label`).
///
/// Serializes (e.g. to JSON) with the extra columns flattened beside the
/// standard ones.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResultRow {
    pub figure: String,
    pub device: String,
    pub variant: String,
    pub x: f64,
    /// Measured wall-clock time of the run.
    pub wall_ms: f64,
    /// Time predicted by the device cost model from the run's I/O pattern; it
    /// is what makes results comparable across machines.
    pub modeled_ms: f64,
    pub pages_read: u64,
    pub io_requests: u64,
    pub rows_out: u64,
    /// Figure-specific columns (e.g. `sequential_reads`, `mode_changes`).
    /// A BTreeMap so that a key appears once and columns come out sorted.
    #[serde(flatten)]
    pub extra: BTreeMap<String, String>,
}

impl ResultRow {
    /// A row with all measurements zero, to be filled in by the experiment
    /// (`ResultRow { wall_ms, ..ResultRow::new(..) }` or field assignment).
    pub fn new(
        figure: impl Into<String>,
        device: impl Into<String>,
        variant: impl Into<String>,
        x: f64,
    ) -> Self {
        ResultRow {
            figure: figure.into(),
            device: device.into(),
            variant: variant.into(),
            x,
            wall_ms: 0.0,
            modeled_ms: 0.0,
            pages_read: 0,
            io_requests: 0,
            rows_out: 0,
            extra: BTreeMap::new(),
        }
    }

    /// Sets (or replaces) an extra column; builder style.
    pub fn with(mut self, column: impl Into<String>, value: impl ToString) -> Self {
        self.set(column, value);
        self
    }

    /// Sets (or replaces) an extra column.
    ///
    /// Panics if `column` is one of the [`STANDARD_COLUMNS`]: the CSV would
    /// carry two columns of that name.
    pub fn set(&mut self, column: impl Into<String>, value: impl ToString) {
        let column = column.into();
        assert!(
            !STANDARD_COLUMNS.contains(&column.as_str()),
            "extra column {column:?} clashes with a standard column"
        );
        self.extra.insert(column, value.to_string());
    }

    /// An extra column parsed as a number (None if absent or not a number).
    pub fn extra_f64(&self, column: &str) -> Option<f64> {
        self.extra.get(column)?.trim().parse().ok()
    }

    /// The row's value in `column` as CSV text ("" for an absent extra column).
    pub fn get(&self, column: &str) -> String {
        match column {
            "figure" => self.figure.clone(),
            "device" => self.device.clone(),
            "variant" => self.variant.clone(),
            "x" => self.x.to_string(),
            "wall_ms" => self.wall_ms.to_string(),
            "modeled_ms" => self.modeled_ms.to_string(),
            "pages_read" => self.pages_read.to_string(),
            "io_requests" => self.io_requests.to_string(),
            "rows_out" => self.rows_out.to_string(),
            other => self.extra.get(other).cloned().unwrap_or_default(),
        }
    }

    fn key(&self) -> (String, String, String, u64) {
        (
            self.figure.clone(),
            self.device.clone(),
            self.variant.clone(),
            self.x.to_bits(),
        )
    }
}

/// The rows of one result file, in the order they were pushed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResultSet {
    rows: Vec<ResultRow>,
}

impl ResultSet {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, row: ResultRow) {
        self.rows.push(row);
    }

    pub fn rows(&self) -> &[ResultRow] {
        &self.rows
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The CSV header: the standard columns, then every extra column used by
    /// any row, sorted by name (rows lacking one get an empty field).
    pub fn columns(&self) -> Vec<String> {
        let mut extra: Vec<&String> = self.rows.iter().flat_map(|r| r.extra.keys()).collect();
        extra.sort();
        extra.dedup();
        STANDARD_COLUMNS
            .iter()
            .map(|c| c.to_string())
            .chain(extra.into_iter().cloned())
            .collect()
    }

    /// The CSV text (RFC 4180 quoting: fields with commas, quotes or line
    /// breaks are quoted, quotes doubled; `\n` line ends).
    pub fn to_csv(&self) -> String {
        let columns = self.columns();
        let mut w = csv::WriterBuilder::new()
            .terminator(csv::Terminator::Any(b'\n'))
            .from_writer(Vec::new());
        // Writing to a Vec cannot fail; the expects document that.
        w.write_record(&columns).expect("write to Vec");
        for row in &self.rows {
            w.write_record(columns.iter().map(|c| row.get(c)))
                .expect("write to Vec");
        }
        let bytes = w.into_inner().expect("flush to Vec");
        String::from_utf8(bytes).expect("fields are UTF-8")
    }

    /// Writes the CSV to `path` (e.g. `results/smooth_scan/fig7.csv`),
    /// creating its directory.
    pub fn write_csv(&self, path: impl AsRef<Path>) -> io::Result<()> {
        let path = path.as_ref();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir)?;
        }
        fs::write(path, self.to_csv())
    }

    /// Reads a CSV written by [`ResultSet::write_csv`] (or by hand with the
    /// standard columns), so figures can be re-plotted without re-running.
    /// Columns beyond the standard ones become extras; empty extra fields
    /// are dropped.
    pub fn read_csv(path: impl AsRef<Path>) -> io::Result<ResultSet> {
        Self::from_csv(&fs::read_to_string(path)?)
    }

    /// Parses CSV text; see [`ResultSet::read_csv`].
    pub fn from_csv(text: &str) -> io::Result<ResultSet> {
        let bad = |msg: String| io::Error::new(io::ErrorKind::InvalidData, msg);
        let mut r = csv::ReaderBuilder::new().from_reader(text.as_bytes());
        let header: Vec<String> = r
            .headers()
            .map_err(|e| bad(e.to_string()))?
            .iter()
            .map(str::to_string)
            .collect();
        let index = |name: &str| {
            header
                .iter()
                .position(|h| h == name)
                .ok_or_else(|| bad(format!("missing column {name:?}")))
        };
        let std_idx: Vec<usize> = STANDARD_COLUMNS
            .iter()
            .map(|c| index(c))
            .collect::<io::Result<_>>()?;
        let mut set = ResultSet::new();
        for (line, rec) in r.records().enumerate() {
            let rec = rec.map_err(|e| bad(e.to_string()))?;
            let field = |i: usize| rec.get(std_idx[i]).unwrap_or("");
            let num = |i: usize| -> io::Result<f64> {
                field(i).trim().parse().map_err(|_| {
                    bad(format!(
                        "record {}: {} = {:?} is not a number",
                        line + 1,
                        STANDARD_COLUMNS[i],
                        field(i)
                    ))
                })
            };
            let count = |i: usize| -> io::Result<u64> {
                field(i).trim().parse().map_err(|_| {
                    bad(format!(
                        "record {}: {} = {:?} is not a count",
                        line + 1,
                        STANDARD_COLUMNS[i],
                        field(i)
                    ))
                })
            };
            let mut row = ResultRow::new(field(0), field(1), field(2), num(3)?);
            row.wall_ms = num(4)?;
            row.modeled_ms = num(5)?;
            row.pages_read = count(6)?;
            row.io_requests = count(7)?;
            row.rows_out = count(8)?;
            for (i, name) in header.iter().enumerate() {
                if std_idx.contains(&i) {
                    continue;
                }
                match rec.get(i) {
                    Some(v) if !v.is_empty() => {
                        row.extra.insert(name.clone(), v.to_string());
                    }
                    _ => {}
                }
            }
            set.push(row);
        }
        Ok(set)
    }

    /// Plot series, one per variant (in first-seen order), from the rows
    /// `keep` accepts (typically one figure and one device), with `y` taken
    /// from each row (e.g. `|r| r.modeled_ms`) and points sorted by x.
    pub fn series(
        &self,
        keep: impl Fn(&ResultRow) -> bool,
        y: impl Fn(&ResultRow) -> f64,
    ) -> Vec<Series> {
        let mut out: Vec<Series> = Vec::new();
        for row in self.rows.iter().filter(|r| keep(r)) {
            let point = (row.x, y(row));
            match out.iter_mut().find(|s| s.name == row.variant) {
                Some(s) => s.points.push(point),
                None => out.push(Series {
                    name: row.variant.clone(),
                    points: vec![point],
                }),
            }
        }
        for s in &mut out {
            s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        out
    }
}

impl Extend<ResultRow> for ResultSet {
    fn extend<T: IntoIterator<Item = ResultRow>>(&mut self, iter: T) {
        self.rows.extend(iter);
    }
}

impl FromIterator<ResultRow> for ResultSet {
    fn from_iter<T: IntoIterator<Item = ResultRow>>(iter: T) -> Self {
        ResultSet {
            rows: iter.into_iter().collect(),
        }
    }
}

/// The median of `values` (the mean of the middle two for an even count),
/// or None if empty. NaNs sort last, so a few failed runs do not shift it
/// much; it is robust to the odd slow run that the mean is not.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// Collects repeated runs of the same point and reduces each to one row.
///
/// Runs are grouped by (figure, device, variant, x). The reduced row has the
/// median `wall_ms` and the median `modeled_ms`; its counters (pages, I/O
/// requests, rows, extra columns) are those of the median run by wall time
/// (the lower middle one for an even count). Counters should not differ
/// between runs of a deterministic experiment; taking them from one real run
/// keeps them mutually consistent where an average would not be. An extra
/// column `runs` records how many runs were reduced.
#[derive(Debug, Clone, Default)]
pub struct Samples {
    groups: Vec<Vec<ResultRow>>,
}

impl Samples {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one run.
    pub fn add(&mut self, row: ResultRow) {
        let key = row.key();
        match self.groups.iter_mut().find(|g| g[0].key() == key) {
            Some(g) => g.push(row),
            None => self.groups.push(vec![row]),
        }
    }

    /// One row per point, in the order points were first added.
    pub fn finish(self) -> ResultSet {
        self.groups
            .into_iter()
            .map(|mut runs| {
                let n = runs.len();
                let wall: Vec<f64> = runs.iter().map(|r| r.wall_ms).collect();
                let modeled: Vec<f64> = runs.iter().map(|r| r.modeled_ms).collect();
                runs.sort_by(|a, b| a.wall_ms.total_cmp(&b.wall_ms));
                let mut row = runs.swap_remove((n - 1) / 2);
                row.wall_ms = median(&wall).expect("group is not empty");
                row.modeled_ms = median(&modeled).expect("group is not empty");
                row.set("runs", n);
                row
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(variant: &str, x: f64, wall: f64) -> ResultRow {
        let mut r = ResultRow::new("fig7", "ssd", variant, x);
        r.wall_ms = wall;
        r.modeled_ms = wall * 2.0;
        r.pages_read = (wall * 10.0) as u64;
        r.io_requests = 3;
        r.rows_out = 42;
        r
    }

    #[test]
    fn csv_header_and_quoting() {
        let mut set = ResultSet::new();
        set.push(
            row("smooth, \"greedy\"", 0.001, 1.5)
                .with("sequential_reads", 7)
                .with("mode_changes", 2),
        );
        set.push(row("line\nbreak", 100.0, 2.0).with("random_reads", 9));
        let csv = set.to_csv();
        let header = csv.lines().next().unwrap();
        assert_eq!(
            header,
            "figure,device,variant,x,wall_ms,modeled_ms,pages_read,io_requests,rows_out,\
             mode_changes,random_reads,sequential_reads"
        );
        assert!(csv.contains("\"smooth, \"\"greedy\"\"\""), "{csv}");
        assert!(csv.contains("\"line\nbreak\""), "{csv}");
        assert!(csv.contains(",0.001,1.5,3,15,3,42,2,,7\n"), "{csv}");
    }

    #[test]
    fn csv_round_trip_through_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results/smooth_scan/fig7.csv");
        let mut set = ResultSet::new();
        set.push(row("full scan", 1e-3, 12.25).with("selectivity_pct", 0.001));
        set.push(row("smooth \"scan\", eager", 0.1, 3.0).with("note", "a,b\r\nc"));
        set.push(row("index scan", 100.0, 1e9 + 0.5));
        set.write_csv(&path).unwrap();
        let back = ResultSet::read_csv(&path).unwrap();
        assert_eq!(back, set);
        assert_eq!(back.columns(), set.columns());
    }

    #[test]
    fn read_rejects_missing_columns_and_bad_numbers() {
        assert!(ResultSet::from_csv("figure,device\nf,d\n").is_err());
        let bad = "figure,device,variant,x,wall_ms,modeled_ms,pages_read,io_requests,rows_out\n\
                   f,d,v,abc,1,1,1,1,1\n";
        let err = ResultSet::from_csv(bad).unwrap_err();
        assert!(err.to_string().contains("x = \"abc\""), "{err}");
    }

    #[test]
    #[should_panic(expected = "clashes")]
    fn extra_may_not_shadow_a_standard_column() {
        let _ = ResultRow::new("f", "d", "v", 1.0).with("wall_ms", 3);
    }

    #[test]
    fn serializes_with_flattened_extras() {
        let json = serde_json::to_string(&row("v", 1.0, 1.0).with("mode_changes", 4)).unwrap();
        assert!(json.starts_with(r#"{"figure":"fig7","device":"ssd","variant":"v","x":1.0,"#));
        assert!(
            json.ends_with(r#""rows_out":42,"mode_changes":"4"}"#),
            "{json}"
        );
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0]), Some(3.0));
        assert_eq!(median(&[5.0, 1.0, 3.0]), Some(3.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[1.0, 100.0, 2.0, f64::NAN, 3.0]), Some(3.0));
    }

    #[test]
    fn samples_reduce_to_medians_keeping_the_median_runs_counters() {
        let mut s = Samples::new();
        for wall in [9.0, 1.0, 5.0] {
            s.add(row("smooth", 0.1, wall).with("run_tag", wall));
        }
        for wall in [4.0, 2.0] {
            s.add(row("full", 0.1, wall));
        }
        s.add(row("smooth", 1.0, 7.0));
        let set = s.finish();
        assert_eq!(set.len(), 3);
        let r = &set.rows()[0];
        assert_eq!((r.variant.as_str(), r.x), ("smooth", 0.1));
        assert_eq!(r.wall_ms, 5.0);
        assert_eq!(r.modeled_ms, 10.0);
        assert_eq!(r.pages_read, 50, "counters of the median run");
        assert_eq!(r.extra["run_tag"], "5");
        assert_eq!(r.extra["runs"], "3");
        let r = &set.rows()[1];
        assert_eq!(
            (r.variant.as_str(), r.wall_ms, r.modeled_ms),
            ("full", 3.0, 6.0)
        );
        assert_eq!(r.pages_read, 20, "lower middle run for an even count");
        assert_eq!(set.rows()[2].extra["runs"], "1");
    }

    #[test]
    fn series_group_by_variant_sorted_by_x() {
        let set: ResultSet = [
            row("b", 10.0, 1.0),
            row("a", 1.0, 2.0),
            row("b", 0.1, 3.0),
            ResultRow::new("other", "ssd", "a", 5.0),
        ]
        .into_iter()
        .collect();
        let series = set.series(|r| r.figure == "fig7", |r| r.wall_ms);
        assert_eq!(series.len(), 2);
        assert_eq!(series[0].name, "b");
        assert_eq!(series[0].points, vec![(0.1, 3.0), (10.0, 1.0)]);
        assert_eq!(series[1].points, vec![(1.0, 2.0)]);
    }
}

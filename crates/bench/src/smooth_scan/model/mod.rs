//! `strata model`: the Smooth Scan paper's analytical figures (Fig. 9–12) from
//! the cost model of [`super::cost_model`], and the model's predictions
//! beside measured execution times (the paper's Fig. 24).
//!
//! Two halves, both plain functions on data so that the command line only
//! parses flags and prints:
//!
//! * **Analytical figures** — [`figure_results`] (a figure as the standard
//!   [`ResultSet`]: the competitive ratio in `modeled_ms` and in an extra
//!   column `cr`), [`figure_plot`], [`figure_table`] (a few points for the
//!   terminal), [`paper_comparisons`] and [`analytical_summary`] (our values
//!   beside the paper's, and where the formulas as printed do not give the
//!   paper's numbers), and [`write_analytical`] for all of them at once.
//! * **Predicted vs measured** — [`predicted_vs_measured`] reads a measured
//!   sweep (rows of `full`, `index`, `sort` and `smooth (…)` variants, `x` the
//!   selectivity in percent), builds [`CostParams`] for the measured table with
//!   the device profile's page times ([`DeviceTimes::from_profile`]) and
//!   predicts every path at every measured `x`; [`fig24_plot`],
//!   [`fig24_summary`] and [`write_fig24`] turn that into `fig24.csv`, the plot
//!   and `fig24.md` with the ratio model / measured per path.
//!
//! What is compared with what: on a modeled device (`modeled_ms > 0` in the
//! measured row) the device model's I/O time is set beside the cost model's
//! I/O part, since neither counts CPU; on a real device the wall time is set
//! beside the model's total (I/O + CPU).

mod analytical;
mod fig24;

pub use analytical::*;
pub use fig24::*;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::results::{ResultRow, ResultSet};
    use crate::smooth_scan::competitive;
    use crate::smooth_scan::cost_model::{self, MorphPolicy, SmoothAssumptions};
    use strata_storage::device::DeviceProfile;

    fn row_at(set: &ResultSet, device: &str, x: f64) -> ResultRow {
        set.rows()
            .iter()
            .find(|r| r.device == device && r.x == x)
            .cloned()
            .unwrap_or_else(|| panic!("no {device} row at {x}"))
    }

    #[test]
    fn fig10_csv_has_the_papers_two_points() {
        let set = figure_results(&competitive::figure_10());
        let csv = set.to_csv();
        assert!(csv.starts_with(
            "figure,device,variant,x,wall_ms,modeled_ms,pages_read,io_requests,rows_out,cr,"
        ));
        let back = ResultSet::from_csv(&csv).unwrap();
        assert_eq!(back.len(), set.len());
        let at_1k = row_at(&back, "hdd", 1000.0);
        let at_10k = row_at(&back, "hdd", 10_000.0);
        assert_eq!(at_1k.figure, "fig10");
        assert_eq!(at_1k.variant, "greedy");
        for (r, paper) in [(&at_1k, 110.0), (&at_10k, 760.0)] {
            let cr = r.extra_f64("cr").unwrap();
            assert_eq!(cr, r.modeled_ms);
            assert!((cr / paper - 1.0).abs() < 0.03, "{cr} vs {paper}");
        }
        assert!(back.rows().iter().any(|r| r.device == "ssd"));
    }

    #[test]
    fn figure_rows_name_devices_and_table_sizes() {
        let set = figure_results(&competitive::figure_11());
        let r = set
            .rows()
            .iter()
            .find(|r| r.variant == "selectivity-increase, #P=100000" && r.x == 8.0)
            .unwrap();
        assert_eq!(r.device, "hdd");
        assert_eq!(r.extra_f64("pages"), Some(100_000.0));
        assert!((r.modeled_ms - 134.4).abs() < 0.1, "{}", r.modeled_ms);
        let (header, rows) = figure_table(&competitive::figure_11());
        assert_eq!(header[0], "x (expansions)");
        assert!(rows.iter().all(|r| r.len() == header.len()));
        assert!(rows.iter().any(|r| r[0] == "8"));
        let (_, rows9) = figure_table(&competitive::figure_9());
        let xs: Vec<&str> = rows9.iter().map(|r| r[0].as_str()).collect();
        assert_eq!(xs, ["100", "1000", "10000", "100000", "1.00e6", "3.00e6"]);
        let t = text_table(&header, &rows);
        assert!(t.lines().count() == rows.len() + 2, "{t}");
    }

    #[test]
    fn markdown_has_the_comparison_table_and_the_discrepancies() {
        let figs = competitive::analytical_figures();
        let md = analytical_summary(&figs);
        let text = md.as_str();
        assert!(
            text.contains("|  | ours | paper | ours / paper | note |"),
            "{text}"
        );
        assert!(text.contains("| Fig. 10 Greedy CR, 1K pages, HDD | 109 | 110 |"));
        assert!(text.contains("| Fig. 11 SI: peak CR, 100K pages, HDD | 134 | 100 |"));
        assert!(text.contains("| Eq. 42 Elastic worst case CR, SSD | 3 | 6 | 0.5x |"));
        assert!(
            text.contains("| Fig. 9 Elastic highest page-miss CR, 100 pages, HDD | 3.51 | 2.45 |")
        );
        assert!(text.contains("NOT reproduced"));
        assert!(text.contains("![Greedy Smooth Scan"));
        assert!(text.contains("(model-fig12.svg)"));
        let c = paper_comparisons();
        assert!(c.iter().all(|c| c.ours.is_finite()));
    }

    #[test]
    fn write_analytical_files() {
        let dir = tempfile::tempdir().unwrap();
        let out = write_analytical(dir.path()).unwrap();
        assert_eq!(out.figures.len(), 4);
        assert_eq!(out.files.len(), 4 * 3 + 1);
        for f in &out.files {
            assert!(f.exists(), "{}", f.display());
        }
        let back = ResultSet::read_csv(dir.path().join("model-fig12.csv")).unwrap();
        assert!(back.columns().contains(&"cr".to_string()));
    }

    #[test]
    fn variants_classify() {
        assert_eq!(classify_variant("full"), Some(PathKind::Full));
        assert_eq!(classify_variant("Full scan"), Some(PathKind::Full));
        assert_eq!(classify_variant("index"), Some(PathKind::Index));
        assert_eq!(classify_variant("sort"), Some(PathKind::Sort));
        assert_eq!(
            classify_variant("smooth (greedy)"),
            Some(PathKind::Smooth(MorphPolicy::Greedy))
        );
        assert_eq!(
            classify_variant("smooth (si, eager)"),
            Some(PathKind::Smooth(MorphPolicy::SelectivityIncrease))
        );
        assert_eq!(
            classify_variant("smooth (elastic)"),
            Some(PathKind::Smooth(MorphPolicy::Elastic))
        );
        assert_eq!(
            classify_variant("smooth"),
            Some(PathKind::Smooth(MorphPolicy::Elastic))
        );
        assert_eq!(classify_variant("switch"), None);
        assert_eq!(
            classify_variant("smooth (cost-aware, eager)"),
            None,
            "the cost-aware policy has no model; it must not be set beside Elastic's"
        );
        assert!(device_matches("HDD", "hdd"));
        assert!(device_matches("hdd (modeled)", "hdd"));
        assert!(!device_matches("ssd", "hdd"));
        assert!(!device_matches("real (O_DIRECT)", "hdd"));
    }

    /// A tiny measured sweep on the modeled HDD and SSD plus rows the model
    /// cannot compare.
    fn synthetic() -> ResultSet {
        let mut set = ResultSet::new();
        for device in ["hdd", "ssd"] {
            for x in [0.01, 0.1, 1.0, 10.0, 100.0] {
                for (i, v) in ["full", "index", "sort", "smooth (elastic)"]
                    .iter()
                    .enumerate()
                {
                    let mut r = ResultRow::new("fig7", device, *v, x);
                    r.wall_ms = 10.0 + i as f64;
                    r.modeled_ms = 100.0 * (i as f64 + 1.0) * (1.0 + x);
                    r.pages_read = if *v == "full" { 7463 } else { 100 };
                    r.rows_out = (1_000_000.0 * x / 100.0) as u64;
                    set.push(r);
                }
            }
        }
        set.push(ResultRow::new("fig7", "hdd", "switch", 1.0));
        set.push(ResultRow::new("fig7", "real (O_DIRECT)", "full", 1.0));
        set
    }

    fn shape() -> TableShape {
        TableShape {
            rows: 1_000_000,
            pages: 7463,
            key_size: 4,
            source: "test".into(),
        }
    }

    #[test]
    fn one_model_row_per_measured_row() {
        let measured = synthetic();
        let profiles = [
            DeviceProfile::builtin("hdd").unwrap(),
            DeviceProfile::builtin("ssd").unwrap(),
        ];
        let f = predicted_vs_measured(
            &measured,
            &shape(),
            &profiles,
            SmoothModelChoice::Paper,
            "synthetic.csv",
        )
        .unwrap();
        let comparable = 2 * 5 * 4;
        let model: Vec<&ResultRow> = f
            .results
            .rows()
            .iter()
            .filter(|r| r.variant.ends_with(" (model)"))
            .collect();
        let meas = f
            .results
            .rows()
            .iter()
            .filter(|r| r.variant.ends_with(" (measured)"))
            .count();
        assert_eq!(model.len(), comparable);
        assert_eq!(meas, comparable);
        assert_eq!(f.skipped.len(), 2, "{:?}", f.skipped);
        assert_eq!(f.devices.len(), 2);
        assert_eq!(f.ratios.len(), 8);
        for r in &f.ratios {
            assert_eq!(r.points, 5);
            assert_eq!(r.basis, "modeled I/O");
            assert!(r.min <= r.median && r.median <= r.max, "{r:?}");
        }
        // The model row: I/O part compared with the measured modeled time.
        let (_, hdd) = &f.devices[0];
        let full = model
            .iter()
            .find(|r| r.device == "hdd" && r.variant == "full (model)" && r.x == 1.0)
            .unwrap();
        let fs = cost_model::full_scan_cost(hdd);
        assert!((full.modeled_ms - fs.io).abs() < 1e-9);
        assert!((full.wall_ms - fs.total()).abs() < 1e-9);
        assert_eq!(full.pages_read, hdd.pages());
        assert_eq!(full.rows_out, 10_000);
        let want = fs.io / (200.0 * 1.0);
        assert!((full.extra_f64("ratio").unwrap() - want).abs() < 1e-9);
        // The predictions are those of cost_vs_selectivity.
        let sels = [1e-4, 1e-2, 1.0];
        let c = competitive::cost_vs_selectivity(hdd, &sels, &SmoothAssumptions::default());
        for (name, path) in [
            ("full scan", PathKind::Full),
            ("index scan", PathKind::Index),
            ("sort scan", PathKind::Sort),
            ("smooth scan", PathKind::Smooth(MorphPolicy::Elastic)),
        ] {
            for &(s, y) in &c.series(name).unwrap().points {
                let p = predict(hdd, path, s, SmoothModelChoice::Paper);
                assert!((p.total_ms() - y).abs() <= 1e-9 * y.max(1.0), "{name} {s}");
            }
        }
        // CSV round trip, plot and markdown.
        let back = ResultSet::from_csv(&f.results.to_csv()).unwrap();
        assert_eq!(back.len(), f.results.len());
        let plot = fig24_plot(&f, "hdd");
        assert!(plot.to_svg().contains("smooth (elastic) (model)"));
        let md = fig24_summary(&f, &[("hdd".into(), "fig24.svg".into())]);
        let text = md.as_str();
        assert!(text.contains("## Model / measured per path"), "{text}");
        assert!(
            text.contains("| hdd | smooth (elastic) | modeled I/O | 5 |"),
            "{text}"
        );
        assert!(text.contains("variant 'switch' is not a modeled path"));
    }

    #[test]
    fn one_device_and_wall_basis() {
        let mut measured = synthetic();
        let mut r = ResultRow::new("fig7", "hdd", "full", 50.0);
        r.wall_ms = 1000.0;
        measured.push(r);
        let f = predicted_vs_measured(
            &measured,
            &shape(),
            &[DeviceProfile::builtin("hdd").unwrap()],
            SmoothModelChoice::Simulated,
            "s.csv",
        )
        .unwrap();
        assert!(f.results.rows().iter().all(|r| r.device == "hdd"));
        let wall = f
            .ratios
            .iter()
            .find(|r| r.basis == "wall")
            .expect("a wall-time group");
        assert_eq!(wall.points, 1);
        assert!(
            f.results
                .rows()
                .iter()
                .any(|r| r.extra.get("smooth_model").map(String::as_str) == Some("simulated"))
        );
        let dir = tempfile::tempdir().unwrap();
        let files = write_fig24(dir.path(), &f).unwrap();
        assert_eq!(files.len(), 4, "{files:?}");
        assert!(dir.path().join("fig24.png").exists());
        // No comparable rows.
        let none = predicted_vs_measured(
            &ResultSet::new(),
            &shape(),
            &[DeviceProfile::builtin("hdd").unwrap()],
            SmoothModelChoice::Paper,
            "empty",
        );
        assert!(none.is_err());
    }

    #[test]
    fn table_shape_choice() {
        let t = |rows, pages, src: &str| TableShape {
            rows,
            pages,
            key_size: 4,
            source: src.into(),
        };
        let (s, n) = choose_table_shape(
            (None, None),
            Some(t(1000, 10, "db")),
            Some(t(1010, 10, "csv")),
        )
        .unwrap();
        assert_eq!((s.rows, s.source.as_str(), n.len()), (1000, "db", 0));
        let (s, n) = choose_table_shape(
            (None, None),
            Some(t(10_000_000, 74_627, "db")),
            Some(t(200_000, 1493, "csv")),
        )
        .unwrap();
        assert_eq!((s.rows, s.pages, n.len()), (200_000, 1493, 1));
        let (s, _) = choose_table_shape((Some(5), None), None, Some(t(7, 3, "csv"))).unwrap();
        assert_eq!((s.rows, s.pages), (5, 3));
        let (s, _) = choose_table_shape((Some(5), Some(2)), Some(t(7, 3, "db")), None).unwrap();
        assert_eq!((s.rows, s.pages), (5, 2));
        assert!(choose_table_shape((Some(5), None), None, None).is_err());
    }

    #[test]
    fn censored_rows_are_not_compared() {
        let mut measured = synthetic();
        let mut r = ResultRow::new("fig7", "hdd", "index", 50.0).with("censored", "yes");
        r.modeled_ms = 60_000.0;
        measured.push(r);
        let f = predicted_vs_measured(
            &measured,
            &shape(),
            &[DeviceProfile::builtin("hdd").unwrap()],
            SmoothModelChoice::Paper,
            "s.csv",
        )
        .unwrap();
        assert!(!f.results.rows().iter().any(|r| r.x == 50.0));
        assert!(
            f.skipped.iter().any(|s| s.contains("censored")),
            "{:?}",
            f.skipped
        );
    }

    #[test]
    fn table_shape_inferred_and_measured_file_found() {
        let measured = synthetic();
        let t = infer_table_shape(&measured).unwrap();
        assert_eq!(t.pages, 7463);
        assert_eq!(t.rows, 1_000_000);
        assert_eq!(
            t.params(&DeviceProfile::builtin("hdd").unwrap()).pages(),
            7463
        );
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(find_measured(dir.path()), None);
        measured.write_csv(dir.path().join("fig7.csv")).unwrap();
        figure_results(&competitive::figure_10())
            .write_csv(dir.path().join("model-fig10.csv"))
            .unwrap();
        std::fs::write(dir.path().join("junk.csv"), "a,b\n1,2\n").unwrap();
        assert_eq!(find_measured(dir.path()), Some(dir.path().join("fig7.csv")));
        // 15b.csv is preferred even with fewer rows.
        let small: ResultSet = measured.rows().iter().take(8).cloned().collect();
        small.write_csv(dir.path().join("15b.csv")).unwrap();
        assert_eq!(find_measured(dir.path()), Some(dir.path().join("15b.csv")));
    }
}

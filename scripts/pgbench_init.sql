-- pgbench's four tables at scale :scale, as `pgbench -i -s :scale` makes
-- them, for strata serve (`pgbench -i` itself needs what strata lacks:
-- fillfactor, VACUUM, ALTER TABLE ... ADD PRIMARY KEY, several tables in one
-- TRUNCATE). Replace :scale with the scale factor (psql -v scale=N).
CREATE TABLE pgbench_branches (bid INT NOT NULL PRIMARY KEY, bbalance INT, filler CHAR(88));
CREATE TABLE pgbench_tellers (tid INT NOT NULL PRIMARY KEY, bid INT, tbalance INT, filler CHAR(84));
CREATE TABLE pgbench_accounts (aid INT NOT NULL PRIMARY KEY, bid INT, abalance INT, filler CHAR(84));
CREATE TABLE pgbench_history (tid INT, bid INT, aid INT, delta INT, mtime TIMESTAMP, filler CHAR(22));
INSERT INTO pgbench_branches SELECT value, 0, '' FROM generate_series(1, 1 * :scale);
INSERT INTO pgbench_tellers SELECT value, (value - 1) / 10 + 1, 0, '' FROM generate_series(1, 10 * :scale);
INSERT INTO pgbench_accounts SELECT value, (value - 1) / 100000 + 1, 0, '' FROM generate_series(1, 100000 * :scale);
ANALYZE;

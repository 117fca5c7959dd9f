-- sqlwork.sql: the sqlite3 real-program workload of tools/bench (run.py).
--
-- run.py turns this file into the script it feeds the sqlite3 shell
-- (`sqlite3 -bail :memory: '.read SCRIPT'`): it repeats the block between
-- the xbench:batch markers once per transaction, after setting @lo and @hi
-- to the ids of that batch (10,000 rows per transaction), and replaces
-- @MAPS@ with a side file that receives the executable mappings of the
-- process (the preload check; stdout stays the same for every allocator).
--
-- Row values are computed from the id only (h = id * 2654435761 mod 2^32),
-- so the output is deterministic. Sizes are mixed: `note` is 10-1200 bytes
-- of text, `payload` 0-4000 bytes of blob (the biggest spill into overflow
-- pages). The database lives in memory: every page is a malloc'd block of
-- the page cache, and sorts and temporary b-trees stay in memory too.
PRAGMA temp_store = MEMORY;
CREATE TEMP TABLE maps(line TEXT);
.mode csv
.import /proc/self/maps maps
.output @MAPS@
SELECT line FROM maps WHERE line LIKE '% r-xp %';
.output stdout
.mode list
DROP TABLE maps;
CREATE TABLE t(id INTEGER PRIMARY KEY, grp INTEGER, name TEXT, note TEXT,
               payload BLOB, score REAL);
-- xbench:batch begin
BEGIN;
WITH RECURSIVE c(x) AS (SELECT @lo UNION ALL SELECT x + 1 FROM c WHERE x < @hi),
h(x, h) AS (SELECT x, (x * 2654435761) % 4294967296 FROM c)
INSERT INTO t
SELECT x, h % 97, printf('name-%08d', (x * 104729) % 1000003),
       printf('%d:%.*c', h, CASE WHEN h % 10 < 6 THEN 8 + h % 40
                                 WHEN h % 10 < 9 THEN 100 + h % 200
                                 ELSE 400 + h % 800 END, char(97 + h % 26)),
       CAST(printf('%.*c', CASE WHEN h % 100 < 70 THEN h % 64
                                WHEN h % 100 < 95 THEN 100 + h % 400
                                ELSE 1000 + h % 3000 END, char(65 + x % 26)) AS BLOB),
       (h % 100000) / 7.0
FROM h;
COMMIT;
-- xbench:batch end
SELECT 'rows', count(*), sum(length(note)), sum(length(payload)), printf('%.3f', sum(score))
  FROM t;
CREATE INDEX t_name ON t(name);
CREATE INDEX t_grp_score ON t(grp, score);
SELECT 'grp', grp, count(*), sum(length(payload)), printf('%.3f', avg(score)), min(name),
       max(name)
  FROM t GROUP BY grp ORDER BY grp;
SELECT 'prefix', substr(name, 1, 9) AS p, count(*), max(length(note)), sum(length(payload))
  FROM t GROUP BY p ORDER BY 3 DESC, 2 LIMIT 10;
SELECT 'range', id, name FROM t WHERE name BETWEEN 'name-00100000' AND 'name-00100200'
  ORDER BY name;
SELECT 'top', grp, id, printf('%.3f', score) FROM t WHERE grp IN (3, 50, 96)
  ORDER BY grp, score DESC, id LIMIT 15;
SELECT 'concat', grp, length(group_concat(note, ',')), length(group_concat(name, ','))
  FROM t WHERE grp < 5 GROUP BY grp ORDER BY grp;
SELECT 'longest', id, length(note), length(payload) FROM t
  ORDER BY length(note) + length(payload) DESC, id LIMIT 5;
BEGIN;
UPDATE t SET note = note || '-updated', payload = zeroblob(length(payload) / 2)
  WHERE id % 7 = 0;
DELETE FROM t WHERE id % 5 = 0;
COMMIT;
SELECT 'after', count(*), sum(length(note)), sum(length(payload)), max(name) FROM t;

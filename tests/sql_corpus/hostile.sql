-- One hostile statement per line: every one must be refused with UnsafeSQLError.
-- {csv} is replaced by the absolute path of a real CSV file in the test directory.
INSERT INTO patients VALUES (99, 'Mallory', 1, 'Nowhere', DATE '2020-01-01')
UPDATE patients SET age = 0
DELETE FROM patients
dElEtE fRoM patients WhErE id = 1
TRUNCATE patients
DROP TABLE patients
/* comment */ DROP /* c */ TABLE treatments
ALTER TABLE patients ADD COLUMN z INTEGER
CREATE TABLE z AS SELECT 1
CREATE TEMP TABLE z (a INTEGER)
CREATE MACRO m(a) AS a + 1
CREATE VIEW v2 AS SELECT 1
CREATE SECRET (TYPE s3, KEY_ID 'x', SECRET 'y')
VACUUM
CHECKPOINT
ANALYZE
ATTACH ':memory:' AS other
DETACH DATABASE memory
USE temp
BEGIN TRANSACTION
COPY patients TO 'out.csv'
COPY patients FROM '{csv}'
EXPORT DATABASE 'exported'
IMPORT DATABASE 'exported'
INSTALL httpfs
LOAD httpfs
SET enable_external_access = true
SET threads = 1
RESET threads
PRAGMA threads = 1
PRAGMA memory_limit = '1GB'
PRAGMA enable_profiling
PRAGMA disable_optimizer
PRAGMA import_database('exported')
PREPARE p AS DELETE FROM patients
EXECUTE p
SELECT 1; DROP TABLE patients
SELECT 1;DROP TABLE patients;
SELECT 1 /* ; */ ; DELETE FROM patients
DESCRIBE patients; DROP TABLE patients
WITH x AS (SELECT 1) INSERT INTO patients SELECT * FROM patients
WITH x AS (DELETE FROM patients RETURNING *) SELECT * FROM x
WITH x AS (UPDATE patients SET age = 0 RETURNING *) SELECT count(*) FROM x
WITH a AS (SELECT 1), b AS (INSERT INTO patients SELECT * FROM patients RETURNING id) SELECT * FROM a
SELECT * FROM '/etc/passwd'
SELECT * FROM "/etc/passwd"
SELECT * FROM '{csv}'
FROM 'data.csv'
SELECT * FROM "data.csv"
SELECT * FROM 'https://example.com/x.parquet'
SELECT * FROM 's3://bucket/x.parquet'
SELECT * FROM read_csv('{csv}')
SELECT * FROM read_csv_auto('/etc/passwd')
SELECT * FROM read_csv(['data.csv', 'data.csv'])
FROM read_csv('data.csv') SELECT *
SELECT * FROM READ_CSV('data.csv')
SELECT * FROM read_parquet('x.parquet')
SELECT * FROM parquet_scan('x.parquet')
SELECT * FROM parquet_metadata('x.parquet')
SELECT * FROM read_json('x.json')
SELECT * FROM read_json_auto('x.json')
SELECT * FROM read_ndjson('x.json')
SELECT * FROM read_text('/etc/passwd')
SELECT * FROM read_blob('/etc/passwd')
SELECT * FROM glob('*')
SELECT * FROM sniff_csv('{csv}')
SELECT * FROM iceberg_scan('x')
SELECT * FROM delta_scan('x')
SELECT * FROM histogram('{csv}', a)
SELECT * FROM patients WHERE id IN (SELECT id FROM (SELECT * FROM read_csv('{csv}')))
SELECT * FROM patients p JOIN read_csv('{csv}') c ON p.id = c.id
SELECT * FROM patients p, LATERAL (SELECT * FROM read_csv('{csv}')) x
SELECT id FROM patients UNION ALL SELECT id FROM read_csv('{csv}')
SELECT (SELECT count(*) FROM '{csv}') AS n
SELECT * FROM patients WHERE EXISTS (SELECT 1 FROM read_text('/etc/passwd'))
WITH c AS (SELECT * FROM read_csv('{csv}')) SELECT * FROM c
SELECT getenv('HOME')
SELECT * FROM patients WHERE name = GETENV('USER')
SELECT nextval('seq')
SELECT setseed(0.5)
CALL query('DROP TABLE patients')
SELECT * FROM query('SELECT * FROM read_csv(''data.csv'')')
SELECT * FROM query_table('patients')
SELECT * FROM json_execute_serialized_sql('{}')
CALL checkpoint()
SELECT * FROM force_checkpoint()
CALL enable_logging()
SELECT * FROM duckdb_secrets()
SELECT * FROM duckdb_settings()
EXPLAIN ANALYZE COPY patients TO 'out.csv'
EXPLAIN ANALYZE DELETE FROM patients
EXPLAIN SELECT * FROM read_csv('{csv}')
DESCRIBE SELECT * FROM read_csv('{csv}')
DESCRIBE '{csv}'
SUMMARIZE FROM '{csv}'
SUMMARIZE SELECT * FROM read_text('/etc/passwd')

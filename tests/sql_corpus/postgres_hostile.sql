-- PostgreSQL: one hostile statement per line; every one must be refused with UnsafeSQLError.
INSERT INTO patients VALUES (99999, 70, 'F')
UPDATE patients SET age = 0
DELETE FROM patients
dElEtE fRoM patients WhErE patient_id = 1
TRUNCATE patients
TRUNCATE TABLE patients, outcomes CASCADE
MERGE INTO patients p USING patients q ON p.patient_id = q.patient_id WHEN MATCHED THEN DELETE
DROP TABLE patients
/* comment */ DROP /* c */ TABLE treatments
ALTER TABLE patients ADD COLUMN z INTEGER
ALTER ROLE analyst SUPERUSER
CREATE TABLE z AS SELECT 1
CREATE TEMP TABLE z (a INTEGER)
CREATE VIEW v2 AS SELECT 1
CREATE FUNCTION f() RETURNS int AS 'SELECT 1' LANGUAGE sql
CREATE EXTENSION dblink
CREATE SERVER s FOREIGN DATA WRAPPER postgres_fdw
SELECT * INTO TEMP stolen FROM patients
SELECT * INTO stolen FROM patients
WITH d AS (DELETE FROM patients RETURNING *) SELECT count(*) FROM d
WITH u AS (UPDATE patients SET age = 1 RETURNING patient_id) SELECT * FROM u
WITH i AS (INSERT INTO patients VALUES (1, 2, 'F') RETURNING *) SELECT 1
SELECT * FROM (WITH d AS (DELETE FROM outcomes RETURNING 1) SELECT * FROM d) AS s
DO $$ BEGIN DELETE FROM patients; END $$
DO LANGUAGE plpgsql $$ BEGIN PERFORM pg_sleep(100); END $$
CALL some_procedure()
COPY patients TO '/tmp/patients.csv'
COPY patients FROM '/etc/passwd'
COPY (SELECT 1) TO PROGRAM 'id > /tmp/pwned'
COPY patients FROM PROGRAM 'cat /etc/passwd'
SELECT pg_read_file('/etc/passwd')
SELECT pg_catalog.pg_read_file('/etc/passwd', 0, 100)
SELECT PG_READ_FILE('postgresql.conf')
SELECT "pg_read_file"('/etc/passwd')
SELECT pg_read_binary_file('/etc/passwd')
SELECT pg_stat_file('postgresql.conf')
SELECT * FROM pg_ls_dir('.')
SELECT pg_ls_dir('/')
SELECT * FROM pg_ls_logdir()
SELECT lo_import('/etc/passwd')
SELECT lo_export(16385, '/tmp/out')
SELECT lo_creat(-1)
SELECT loread(lo_open(16385, 262144), 100)
SELECT * FROM dblink('host=evil', 'SELECT 1') AS t(a int)
SELECT dblink_exec('host=evil', 'DROP TABLE x')
SELECT set_config('default_transaction_read_only', 'off', false)
SELECT set_config('statement_timeout', '0', true)
SELECT current_setting('data_directory')
SELECT current_setting('ssl_key_file')
SELECT current_setting('password_encryption')
SELECT current_setting(name) FROM (VALUES ('config_file')) AS s(name)
SELECT pg_sleep(3600)
SELECT pg_sleep(x) FROM (VALUES (10)) AS t(x)
SELECT pg_sleep_for('1 hour')
SELECT pg_sleep_until('2099-01-01')
SELECT nextval('some_seq')
SELECT setval('some_seq', 1)
SELECT pg_terminate_backend(1)
SELECT pg_cancel_backend(1)
SELECT pg_reload_conf()
SELECT pg_advisory_lock(1)
SELECT pg_try_advisory_lock(42)
SELECT pg_notify('ch', 'x')
SELECT query_to_xml('DELETE FROM patients RETURNING 1', true, false, '')
SELECT table_to_xml('patients', true, false, '')
SELECT * FROM patients FOR UPDATE
SELECT * FROM patients FOR SHARE NOWAIT
SELECT * FROM pg_authid
SELECT rolpassword FROM pg_catalog.pg_authid
SELECT * FROM pg_shadow
SELECT * FROM pg_user_mappings
SELECT * FROM pg_hba_file_rules
SELECT * FROM pg_file_settings
SELECT query FROM pg_stat_activity
SELECT * FROM pg_largeobject
SET statement_timeout = 0
SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE
SET ROLE postgres
RESET ALL
BEGIN
BEGIN READ WRITE
COMMIT
ROLLBACK
START TRANSACTION READ WRITE
SAVEPOINT s1
LOCK TABLE patients IN ACCESS EXCLUSIVE MODE
VACUUM patients
ANALYZE patients
REINDEX TABLE patients
CLUSTER patients
REFRESH MATERIALIZED VIEW mv
GRANT ALL ON patients TO PUBLIC
REVOKE SELECT ON patients FROM analyst
PREPARE p AS DELETE FROM patients
EXECUTE p
DEALLOCATE ALL
LISTEN ch
NOTIFY ch, 'x'
DISCARD ALL
CHECKPOINT
LOAD 'auto_explain'
COMMENT ON TABLE patients IS 'x'
DECLARE c CURSOR FOR SELECT 1
EXPLAIN ANALYZE DELETE FROM patients
EXPLAIN SELECT 1
SHOW ALL
SELECT * FROM information_schema.columns WHERE table_name = 'patients' ORDER BY ordinal_position
SELECT column_default FROM information_schema.columns WHERE table_name = 'patients'
SELECT c::text FROM information_schema.columns AS c WHERE c.table_name = 'patients'
SELECT definition FROM pg_views WHERE schemaname = 'public'
SELECT pg_get_viewdef(c.oid) FROM pg_class AS c WHERE c.relkind = 'v'
SELECT 1; DELETE FROM patients
SELECT 1; COMMIT; DELETE FROM patients
SELECT 1 /* ; */ ; DROP TABLE patients
SELECT count(*) FROM patients; DELETE FROM patients -- a second statement
SELECT 'a'; SELECT 'b'
;;
/* only a comment */

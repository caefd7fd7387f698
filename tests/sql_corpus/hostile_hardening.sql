-- Hostile statements of the hardening round (issue 9): every one must be refused with
-- UnsafeSQLError, on a user connection and on a path-opened database, and no result or
-- error may show the planted secret setting, variable or file.
-- Placeholders: {planted} the planted file next to the database, {csv} a real CSV,
-- {port} the local extension-repository server, {sum:N} N chained terms, {nest:N} N
-- nested subqueries, {paren:N}/{call:N}/{list:N}/{case:N}/{and:N}/{json:N} deep shapes.
-- functions that take SQL text
SELECT json_serialize_plan('SELECT * FROM read_csv(''{planted}'')')
SELECT json_serialize_plan('SELECT * FROM read_csv(''{planted}'', skip=1)')
SELECT json_serialize_plan('SELECT * FROM read_csv(''/etc/passwd'', skip=3)')
SELECT json_serialize_plan('SELECT * FROM ''http://127.0.0.1:{port}/x.parquet''')
SELECT json_serialize_plan('SELECT 1')
SELECT JSON_SERIALIZE_PLAN('SELECT current_setting(''http_proxy_password'')')
SELECT length(json_serialize_plan('SELECT * FROM read_text(''{planted}'')')) AS n
SELECT * FROM patients WHERE json_serialize_plan('SELECT 1') IS NOT NULL
SELECT (SELECT json_serialize_plan('SELECT * FROM read_blob(''{planted}'')')) AS p
WITH p AS (SELECT json_serialize_plan('SELECT * FROM glob(''*'')') AS j) SELECT j FROM p
SELECT list_transform(['SELECT 1'], s -> json_serialize_plan(s)) AS plans
SELECT [json_serialize_plan(q) FOR q IN ['SELECT 1']] AS plans
SELECT json_serialize_plan(name) FROM patients
SELECT CASE WHEN age > 0 THEN json_serialize_plan('SELECT 1') END FROM patients
SELECT name FROM patients ORDER BY json_serialize_plan('SELECT ' || id)
SELECT count(*) FILTER (WHERE json_serialize_plan('SELECT 1') IS NULL) FROM patients
SELECT json_serialize_sql('SELECT * FROM read_csv(''{planted}'')')
SELECT json_deserialize_sql(json_serialize_sql('SELECT 1'))
SELECT * FROM json_execute_serialized_sql(json_serialize_sql('SELECT current_setting(''http_proxy_password'')'))
PRAGMA json_execute_serialized_sql('{}')
SELECT * FROM query('SELECT current_setting(''http_proxy_password'')')
SELECT * FROM query('SELECT * FROM read_text(''{planted}'')')
FROM query_table('pg_settings')
SELECT * FROM query_table(['patients', 'treatments'])
SELECT list_aggr([1, 2], 'current_setting') AS x
SELECT aggregate([1], 'json_serialize_plan') AS x
SELECT list_aggregate(['a'], name) FROM patients
SELECT array_aggr([1], 'getvariable') AS x
EXPLAIN SELECT json_serialize_plan('SELECT 1')
EXPLAIN ANALYZE SELECT * FROM query('SELECT 1')
DESCRIBE SELECT json_serialize_plan('SELECT 1')
SUMMARIZE SELECT json_serialize_plan('SELECT 1') AS p
CALL query('SELECT 1')
-- settings, variables and secrets
SELECT current_setting('http_proxy_password')
SELECT CURRENT_SETTING('http_proxy_password') AS p
SELECT current_setting('custom_extension_repository')
SELECT current_setting('s3_secret_access_key')
SELECT * FROM patients WHERE name = current_setting('http_proxy_password')
SELECT (SELECT current_setting('http_proxy_password')) AS p
SELECT list_transform(['http_proxy_password'], s -> current_setting(s)) AS p
SELECT getvariable('api_token')
SELECT * FROM duckdb_variables()
SELECT * FROM duckdb_settings()
SELECT value FROM duckdb_settings() WHERE name = 'http_proxy_password'
SELECT * FROM pg_settings
SELECT * FROM pg_catalog.pg_settings
SELECT * FROM system.pg_catalog.pg_settings
SELECT * FROM "pg_settings"
SELECT * FROM PG_SETTINGS WHERE name LIKE '%password%'
FROM pg_settings SELECT name, setting
WITH s AS (SELECT * FROM pg_settings) SELECT * FROM s
SELECT * FROM patients p JOIN pg_settings s ON s.name = p.name
SELECT name FROM patients UNION ALL SELECT setting FROM pg_settings
SELECT * FROM patients WHERE EXISTS (SELECT 1 FROM pg_settings WHERE setting = 'x')
SELECT (SELECT setting FROM pg_settings WHERE name = 'http_proxy_password') AS p
SUMMARIZE pg_settings
SUMMARIZE SELECT * FROM pg_settings
SELECT * FROM duckdb_secrets()
SELECT * FROM which_secret('s3://bucket/x', 's3')
SELECT * FROM duckdb_extension_repositories()
SELECT * FROM duckdb_profiling_settings()
CALL duckdb_settings()
CALL duckdb_secrets()
-- logs, prepared statements, other statements' text
SELECT * FROM duckdb_logs
SELECT * FROM duckdb_logs()
SELECT * FROM main.duckdb_logs
SELECT * FROM duckdb_log_contexts()
SELECT * FROM duckdb_logs_parsed('QueryLog')
SELECT * FROM pg_prepared_statements
SELECT * FROM pg_catalog.pg_prepared_statements
SELECT * FROM duckdb_prepared_statements()
SELECT * FROM duckdb_live_query_metrics()
-- the environment: extensions on disk, memory, storage internals
SELECT * FROM duckdb_extensions()
SELECT install_path FROM duckdb_extensions() WHERE installed
SELECT * FROM duckdb_memory()
SELECT * FROM duckdb_temporary_files()
SELECT * FROM duckdb_external_file_cache()
SELECT * FROM pragma_storage_info('patients')
SELECT * FROM pragma_metadata_info()
PRAGMA storage_info('patients')
PRAGMA metadata_info
PRAGMA extension_versions
SELECT * FROM duckdb_eviction_queues()
-- user views and macros that wrap refused things (created by the test fixture)
SELECT * FROM leaky_setting
SELECT * FROM leaky_file
SELECT * FROM outer_leak
SELECT * FROM main.leaky_setting
SELECT count(*) FROM patients, leaky_setting
SUMMARIZE leaky_file
SELECT leak_macro()
SELECT * FROM leak_table_macro()
-- files, by new routes
SELECT * FROM read_text('{planted}')
SELECT * FROM read_blob('{planted}')
SELECT * FROM read_csv('{planted}', header = false)
SELECT * FROM '{planted}'
SELECT * FROM read_json_objects('{planted}')
SELECT * FROM read_duckdb('{planted}')
SELECT * FROM histogram_values('{planted}', column0)
SELECT * FROM summary((SELECT * FROM read_text('{planted}')))
SELECT * FROM duckdb_table_sample('patients')
SELECT * FROM glob('{planted}')
SELECT * FROM parquet_file_metadata('{planted}')
-- extension auto-load by function name (the server must see no request)
SELECT st_point(1, 2)
SELECT ST_GeomFromText('POINT(1 2)')
SELECT h3_latlng_to_cell(0, 0, 1)
SELECT * FROM postgres_scan('host=127.0.0.1 port={port}', 'public', 't')
SELECT * FROM sqlite_scan('{planted}', 't')
SELECT * FROM iceberg_scan('http://127.0.0.1:{port}/x')
SELECT * FROM delta_scan('http://127.0.0.1:{port}/x')
SELECT * FROM read_xlsx('{planted}')
SELECT excel_text(1, '0')
SELECT make_type('INET')
SELECT cast_to_type('1', make_type('INET'))
SELECT * FROM mysql_query('x', 'SELECT 1')
SELECT httpfs_version()
SELECT * FROM duckdb_grammar_extensions()
-- side effects and sleeping
SELECT sleep_ms(100000)
SELECT pg_sleep(100)
SELECT write_log('x')
SELECT setval('seq', 5)
CALL truncate_duckdb_logs()
CALL force_checkpoint()
CALL enable_profiling()
PRAGMA enable_profiling
PRAGMA verify_parallelism
-- planner internals and raw memory scans
SELECT __internal_compress_integral_utinyint(1, 0)
SELECT * FROM pandas_scan(0)
SELECT * FROM arrow_scan(0, 0, 0)
SELECT * FROM seq_scan()
-- deep trees (walked without recursion; refused over the depth limit)
SELECT {sum:400}
SELECT {sum:2000}
SELECT {nest:400}
SELECT {nest:2000}
SELECT {paren:1500}
SELECT {call:800}
SELECT {list:800}
SELECT {case:500}
SELECT * FROM patients WHERE id IN {nest:300}
SELECT from_json('{}', '{json:3000}')
-- statement types the checker does not run (each refused with its reason)
UPDATE EXTENSIONS
UPDATE EXTENSIONS (httpfs)
FORCE INSTALL httpfs
INSTALL httpfs FROM 'http://127.0.0.1:{port}'
LOAD '{planted}'
COPY FROM DATABASE memory TO other
PIVOT treatments ON drug USING sum(dose)
MERGE INTO patients USING treatments ON patients.id = treatments.patient_id WHEN MATCHED THEN DELETE
SET VARIABLE x = 1
RESET VARIABLE api_token
SET GLOBAL http_proxy_password = 'x'
SET SESSION threads = 1
PREPARE q AS SELECT current_setting('http_proxy_password')
DEALLOCATE q
CREATE MACRO leak2() AS current_setting('http_proxy_password')
CREATE OR REPLACE TEMP VIEW v AS SELECT 1
ABORT
COMMIT
ROLLBACK
FORCE CHECKPOINT
PRAGMA threads = 1
PRAGMA table_info = 'patients'
PRAGMA copy_database('memory', 'other')

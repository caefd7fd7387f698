-- Round 3 of the DuckDB guard: statements by what DuckDB will execute, not by spelling.
-- One statement per line. "-- @section" lines start a section (see test_sql_round3_duckdb.py):
-- @refused: refused on every database (user connection, path-opened file, macro file);
-- @shadowing: refused on the database file whose macros shadow allowed names;
-- @fails: may run, but fails without any planted value in the error text.
-- {planted} is a file holding a planted secret line.
-- @refused
SHOW http_proxy_password
SHOW temp_directory
SHOW secret_directory
SHOW home_directory
SHOW extension_directory
SHOW custom_extension_repository
SHOW "http_proxy_password"
SHOW "Temp_Directory"
sHoW TeMp_DiReCtOrY
SHOW/**/temp_directory
SHOW /* a comment */ http_proxy_password
SHOW temp_directory;
   SHOW   secret_directory   ;;
SHOW memory_limit
SHOW threads
SHOW VARIABLES
show variables
SHOW "variables"
SHOW Variables
SELECT * FROM (SHOW VARIABLES)
FROM (SHOW VARIABLES) WHERE name = 'api_token'
SELECT * FROM (SHOW temp_directory)
SELECT * FROM (SHOW "http_proxy_password") AS s(v)
FROM (SHOW http_proxy_password)
SELECT (SELECT * FROM (SHOW http_proxy_password))
SELECT name FROM patients WHERE name IN (SELECT * FROM (SHOW http_proxy_password))
WITH s AS (SHOW http_proxy_password) SELECT * FROM s
WITH s AS (SELECT * FROM (SHOW temp_directory)) SELECT * FROM s
WITH RECURSIVE s(v) AS (SELECT * FROM (SHOW temp_directory) UNION ALL SELECT v FROM s WHERE false) SELECT * FROM s
SELECT * FROM patients, LATERAL (SHOW temp_directory)
SELECT * FROM patients p JOIN LATERAL (SELECT * FROM (SHOW http_proxy_password)) s ON true
SELECT 'x' UNION ALL SELECT * FROM (SHOW http_proxy_password)
SELECT 'x' UNION SELECT * FROM (SHOW secret_directory) EXCEPT SELECT 'y'
(SHOW temp_directory) INTERSECT (SHOW temp_directory)
SELECT list(v) FROM (SHOW http_proxy_password) t(v)
SELECT string_agg(v, ',') FROM (SHOW http_proxy_password) t(v)
SELECT array_agg(v) FROM (SHOW temp_directory) t(v)
SUMMARIZE SELECT * FROM (SHOW http_proxy_password)
SUMMARIZE (SHOW temp_directory)
DESCRIBE SELECT * FROM (SHOW temp_directory)
UNPIVOT (SHOW http_proxy_password) ON COLUMNS(*) INTO NAME k VALUE v
PIVOT (SELECT 1 AS k, * FROM (SHOW http_proxy_password) t(v)) ON k IN (1) USING first(v)
SELECT struct_pack(v := (SELECT * FROM (SHOW http_proxy_password)))
SELECT {'v': (SELECT * FROM (SHOW http_proxy_password))}
SELECT [(SELECT * FROM (SHOW temp_directory))]
SELECT map([1], [(SELECT * FROM (SHOW temp_directory))])
SELECT * FROM json_each((SELECT to_json(list(v)) FROM (SHOW http_proxy_password) t(v)))
SELECT * FROM json_tree((SELECT to_json(v) FROM (SHOW temp_directory) t(v)))
SELECT unnest((SELECT list(v) FROM (SHOW http_proxy_password) t(v)))
SELECT * FROM unnest((SELECT list(v) FROM (SHOW temp_directory) t(v)))
SELECT list_transform([1], i -> (SELECT * FROM (SHOW http_proxy_password)))
SELECT list_transform([1], lambda i: (SELECT * FROM (SHOW temp_directory)))
SELECT [x || (SELECT * FROM (SHOW http_proxy_password)) FOR x IN ['a']]
SELECT list_filter(['a'], x -> x < (SELECT * FROM (SHOW http_proxy_password)))
SELECT error((SELECT * FROM (SHOW http_proxy_password)))
SELECT error('leak: ' || (SELECT * FROM (SHOW temp_directory)))
SELECT error(name) FROM patients
SELECT assert_true(false, (SELECT * FROM (SHOW http_proxy_password)))
SELECT CAST((SELECT * FROM (SHOW http_proxy_password)) AS INTEGER)
SELECT (SELECT * FROM (SHOW http_proxy_password))::INT
SELECT TRY_CAST((SELECT * FROM (SHOW temp_directory)) AS DATE)
SELECT json((SELECT * FROM (SHOW http_proxy_password)))
SELECT strptime((SELECT * FROM (SHOW temp_directory)), '%Y')
SELECT CASE WHEN (SELECT * FROM (SHOW http_proxy_password)) LIKE 'P%' THEN 1 ELSE 0 END
SELECT count(*) FROM patients WHERE EXISTS (SELECT * FROM (SHOW http_proxy_password))
EXPLAIN SELECT * FROM (SHOW http_proxy_password)
EXPLAIN ANALYZE SELECT * FROM (SHOW temp_directory)
SHOW s3_secret_access_key
SHOW azure_storage_connection_string
SHOW pg_debug_show_queries
SHOW sqlite_all_varchar
SHOW unsafe_enable_version_guessing
SHOW ui_local_port
SELECT * FROM (SHOW s3_access_key_id)
SHOW patients
SHOW "patients"
SELECT $api_token
SELECT id FROM patients WHERE $api_token LIKE 'P%'
SELECT ?
SELECT $1
SELECT upper($api_token) AS t
PRAGMA database_size
SELECT memory_limit FROM pragma_database_size()
PRAGMA user_agent
SELECT * FROM pragma_user_agent()
PRAGMA database_list
SELECT path FROM duckdb_databases()
SELECT * FROM pragma_database_list
-- @limits
SELECT list_distinct(range(0, 15000000))
SELECT len(range(0, 300000000))
SELECT range(40000000)
SELECT generate_series(1, 40000000)
SELECT list_sort(range(20000000))
SELECT list_reverse_sort(generate_series(0, 5000000))
SELECT repeat('x', 500000000)
SELECT length(repeat('ab', 100000000))
SELECT string_split(repeat('a,', 100000000), ',')
SELECT string_split_regex(repeat('a,', 10000000), ',')
SELECT damerau_levenshtein(repeat('a', 200000), repeat('b', 200000))
SELECT levenshtein(repeat('a', 9000), repeat('b', 9000))
SELECT jaro_similarity((SELECT string_agg(name, '') FROM patients), 'x')
SELECT repeat([1, 2, 3], 100000000)
SELECT list_resize([1], 300000000)
SELECT array_resize([1], 300000000)
SELECT lpad('x', 500000000, 'y')
SELECT rpad('x', 500000000)
SELECT range(CAST(300000000 AS BIGINT))
SELECT range((SELECT 300000000))
SELECT range(age * 1000000) FROM patients
SELECT repeat('x', age * 10000000) FROM patients
SELECT range(1e9::BIGINT)
SELECT list_transform(range(5000), x -> range(5000))
SELECT [[y FOR y IN range(5000)] FOR x IN range(5000)]
SELECT range(5000), range(5000)
SELECT unnest(range(0, 100000000))
SELECT count(*) FROM range(0, 20000000000)
SELECT count(*) FROM generate_series(1, 50000000)
SELECT list(i) FROM range(0, 300000000) t(i)
SELECT * FROM range((SELECT 300000000))
-- @shadowing
SELECT upper('a')
SELECT UPPER('a')
SELECT "upper"('a')
SELECT main.upper('a')
SELECT cases.main.upper('a')
SELECT 'a'.upper()
SELECT upper(name) FROM patients
SELECT patients.name.upper() FROM patients
SELECT abs(1)
SELECT abs(-age) FROM patients
SELECT s2.md5('a')
SELECT cases.s2.md5('a')
SELECT md5('a')
SELECT lower('A')
FROM range(1)
SELECT * FROM range(1)
SELECT * FROM range(3) t(i)
SELECT * FROM main.range(1)
SELECT * FROM generate_series(1)
SELECT * FROM json_each('{}')
SELECT * FROM patients, json_each('{"a": 1}')
SELECT * FROM v_upper
SELECT * FROM s2.v_range
SELECT * FROM v_chain
SELECT (SELECT upper('a'))
WITH c AS (SELECT upper('a') AS u) SELECT * FROM c
SELECT list_transform([1], x -> upper('a'))
SELECT [upper(x) FOR x IN ['a']]
SELECT list_aggr(['a'], 'min')
SELECT min(age) OVER () FROM patients
SELECT first(name ORDER BY id) FROM patients
SELECT abs(age) FILTER (WHERE age > 0) FROM patients
SHOW TABLES FROM main
SELECT * FROM (SHOW ALL TABLES)
SELECT count(*) FROM patients
SELECT min(age) FROM patients
SUMMARIZE patients
SHOW ALL TABLES
PRAGMA table_info('patients')
DESCRIBE SELECT upper('a')
EXPLAIN SELECT upper('a')
SELECT chained(1)
SELECT * FROM file_macro()
-- @fails
SELECT CAST(name AS INTEGER) FROM patients
SELECT name::DATE FROM patients
SELECT json(name) FROM patients
SELECT strptime(name, '%Y-%m-%d') FROM patients
SELECT name::UUID FROM patients
SELECT CAST(name AS STRUCT(a INT)) FROM patients
SELECT 2147483647::INT + age FROM patients
SELECT [1, 2][name::INT] FROM patients
DESCRIBE temp_directory
DESCRIBE http_proxy_password
SUMMARIZE temp_directory

-- Hostile PostgreSQL statements: "<fragment the refusal must name> ||| <statement>".
-- Run as the read-only role and as a superuser on tests/test_postgres_guard.py's database
-- (its hostile views and functions); none may leak a setting, a file or a password hash.
-- SQL or a query name passed as text
it runs SQL or a query named in text ||| SELECT ts_stat('SELECT to_tsvector(current_setting(''d2.secret''))')
table function ts_stat() ||| SELECT * FROM ts_stat('SELECT to_tsvector(setting) FROM pg_settings')
it runs SQL or a query named in text ||| SELECT ts_rewrite('a'::tsquery, 'SELECT ''a''::tsquery, current_setting(''d2.secret'')::tsquery')
it runs SQL or a query named in text ||| SELECT query_to_xml('SELECT rolpassword FROM pg_authid', true, false, '')
it runs SQL or a query named in text ||| SELECT query_to_xmlschema('SELECT 1', true, false, '')
it runs SQL or a query named in text ||| SELECT query_to_xml_and_xmlschema('SELECT setting FROM pg_settings', true, false, '')
it runs SQL or a query named in text ||| SELECT cursor_to_xml('c', 1, false, true, '')
it runs SQL or a query named in text ||| SELECT table_to_xml('pg_authid', true, false, '')
it runs SQL or a query named in text ||| SELECT table_to_xml_and_xmlschema('pg_shadow', true, false, '')
it runs SQL or a query named in text ||| SELECT schema_to_xml('pg_catalog', true, false, '')
it runs SQL or a query named in text ||| SELECT database_to_xml(true, false, '')
it runs SQL or a query named in text ||| SELECT database_to_xmlschema(true, false, '')
it runs SQL or a query named in text ||| SELECT pg_catalog.ts_stat('SELECT 1')
it runs SQL or a query named in text ||| SELECT "ts_stat"('SELECT 1')
it runs SQL or a query named in text ||| SELECT TS_STAT('SELECT 1')
it runs SQL or a query named in text ||| SELECT length(ts_rewrite('a'::tsquery, 'SELECT 1')::text) FROM patients
it connects to another server ||| SELECT dblink('dbname=postgres', 'SELECT rolpassword FROM pg_authid')
table function dblink() ||| SELECT * FROM dblink('dbname=postgres', 'SELECT 1') AS t(a int)
-- files, large objects, server administration
it reads or writes server files ||| SELECT pg_read_file('d2_secret.txt')
it reads or writes server files ||| SELECT pg_read_binary_file('d2_secret.txt')
it reads or writes server files ||| SELECT pg_catalog.pg_read_file('postgresql.conf', 0, 200)
table function pg_ls_dir() ||| SELECT * FROM pg_ls_dir('.')
it reads or writes server files ||| SELECT pg_ls_dir('.')
it reads or writes server files ||| SELECT pg_stat_file('d2_secret.txt')
it reads or writes server files ||| SELECT lo_import('/etc/passwd')
it reads or writes server files ||| SELECT lo_get(1)
it reads or writes server files ||| SELECT pg_relation_filepath('patients')
it reads or writes server files ||| SELECT pg_current_logfile()
it reads or writes server files ||| SELECT pg_tablespace_location(1663)
it reads or writes server files ||| SELECT (SELECT pg_read_file('d2_secret.txt'))
it reads or writes server files ||| WITH x AS (SELECT pg_read_file('d2_secret.txt') AS f) SELECT * FROM x
it administers the server ||| SELECT pg_reload_conf()
it administers the server ||| SELECT pg_terminate_backend(1)
it administers the server ||| SELECT pg_cancel_backend(1)
it administers the server ||| SELECT pg_rotate_logfile()
it administers the server ||| SELECT pg_create_restore_point('x')
-- settings, configuration files, other sessions and credentials
relation pg_settings is not readable ||| SELECT * FROM pg_settings
relation pg_settings is not readable ||| SELECT setting FROM pg_catalog.pg_settings WHERE name = 'data_directory'
relation pg_db_role_setting is not readable ||| SELECT setconfig FROM pg_db_role_setting
relation pg_roles is not readable ||| SELECT rolconfig FROM pg_roles
relation pg_user is not readable ||| SELECT useconfig FROM pg_user
relation pg_authid is not readable ||| SELECT rolpassword FROM pg_authid
relation pg_shadow is not readable ||| SELECT passwd FROM pg_shadow
relation pg_stat_activity is not readable ||| SELECT query FROM pg_stat_activity
relation pg_file_settings is not readable ||| SELECT * FROM pg_file_settings
relation pg_hba_file_rules is not readable ||| SELECT * FROM pg_hba_file_rules
relation pg_settings is not readable ||| SELECT * FROM "pg_settings"
relation pg_settings is not readable ||| SELECT * FROM PG_CATALOG.PG_SETTINGS
relation pg_authid is not readable ||| SELECT * FROM pg_catalog."pg_authid"
relation pg_authid is not readable ||| SELECT * FROM patients WHERE EXISTS (SELECT 1 FROM pg_authid)
relation pg_settings is not readable ||| SELECT (SELECT string_agg(setting, ',') FROM pg_settings)
relation pg_settings is not readable ||| SELECT * FROM patients UNION ALL SELECT 1, 2, name FROM pg_settings
relation pg_catalog.pg_stat_ssl is not readable ||| SELECT * FROM pg_stat_ssl
relation pg_prepared_statements is not readable ||| SELECT * FROM pg_prepared_statements
relation pg_catalog.pg_proc is not readable ||| SELECT prosrc FROM pg_proc
relation information_schema.routines is not readable ||| SELECT routine_definition FROM information_schema.routines
relation information_schema.user_mapping_options is not readable ||| SELECT * FROM information_schema.user_mapping_options
relation pg_subscription is not readable ||| SELECT * FROM pg_subscription
relation pg_user_mappings is not readable ||| SELECT * FROM pg_user_mappings
relation pg_catalog.pg_stat_wal_receiver is not readable ||| SELECT * FROM pg_catalog.pg_stat_wal_receiver
current_setting(d2.secret) may reveal secrets ||| SELECT current_setting('d2.secret')
current_setting(data_directory) may reveal secrets ||| SELECT current_setting('data_directory')
current_setting(hba_file) may reveal secrets ||| SELECT current_setting('hba_file')
current_setting(config_file) may reveal secrets ||| SELECT pg_catalog.current_setting('config_file')
current_setting(?) may reveal secrets ||| SELECT current_setting(name) FROM (VALUES ('d2.secret')) AS s(name)
it reads or changes the server's settings ||| SELECT set_config('d2.secret', 'x', true)
table function pg_stat_get_activity() ||| SELECT * FROM pg_stat_get_activity(NULL)
it shows other sessions ||| SELECT pg_stat_get_backend_activity(1)
table function pg_show_all_settings() ||| SELECT * FROM pg_show_all_settings()
it reads or changes the server's settings ||| SELECT pg_show_all_settings()
it shows other sessions ||| SELECT pg_blocking_pids(1)
-- the database's own views and functions, checked through their definitions
view public.settings_view is refused ||| SELECT * FROM settings_view
view public.inner_secrets is refused ||| SELECT * FROM secrets_view
view public.settings_view is refused ||| SELECT p.patient_id FROM patients p JOIN settings_view s ON true
view public.xml_view is refused ||| SELECT * FROM xml_view
view public.role_view is refused ||| SELECT * FROM public.role_view
function public.leak_setting() is refused ||| SELECT leak_setting()
function public.leak_setting() is refused ||| SELECT public.leak_setting()
function public.upper() is refused ||| SELECT upper(1)
function public.plpg_leak() is written in plpgsql ||| SELECT plpg_leak()
function public.definer_leak() is SECURITY DEFINER ||| SELECT definer_leak()
function public.atomic_leak() is refused ||| SELECT atomic_leak()
function public.stat_wrapper() is refused ||| SELECT stat_wrapper()
function public.nested_leak() is refused ||| SELECT nested_leak()
view public.func_view is refused ||| SELECT * FROM func_view
function public.evil_agg() is an aggregate ||| SELECT evil_agg(patient_id) FROM patients
function mystery_fn() is not allowed ||| SELECT mystery_fn(1)
the database defines operator public.# ||| SELECT 'a' # 'b'
-- string breakouts: what the guard reads is what the server runs
it reads or writes server files ||| SELECT 'a\' AS p, pg_read_file($$d2_secret.txt$$) AS leak --'
it reads or writes server files ||| SELECT E'a\\' AS p, pg_read_file('d2_secret.txt') AS leak --'
current_setting(d2.secret) may reveal secrets ||| SELECT 'x\' AS p, current_setting('d2.secret') AS leak --'
relation pg_authid is not readable ||| SELECT 'a\' AS p, (SELECT rolpassword FROM pg_authid LIMIT 1) AS leak --'
-- state, sleeping, locks
it has side effects ||| SELECT nextval('d2_seq')
it has side effects ||| SELECT pg_advisory_lock(1)
it has side effects ||| SELECT txid_current()
it has side effects ||| SELECT pg_notify('c', 'x')
it has side effects ||| SELECT setseed(0.5)
it sleeps ||| SELECT pg_sleep_for('1 second')
it reveals the server's network ||| SELECT inet_server_addr()
it is an internal support function ||| SELECT int4pl(1, 2)

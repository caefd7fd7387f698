"""Which PostgreSQL functions agent-written SQL may call: one reviewed allowlist.

Every function name in ``pg_proc`` of PostgreSQL 15 is classified here, the way
:mod:`~d2_notebook.data.function_policy` classifies DuckDB's: allowed, or refused with a
:class:`PgRefusal` that says why. A name in no list (a newer server's function, an
extension's) is :attr:`PgRefusal.UNCLASSIFIED` and refused, so an upgrade never widens
the policy silently (``tests/test_postgres_guard.py`` fails on any unclassified name of
the server it runs against).

Families:

- the reviewed allowlist (:data:`ALLOWED`): arithmetic, text, dates, JSON, arrays, ranges,
  full text search, aggregates and window functions, privilege tests, name lookups;
- refusals by name (:data:`_REFUSED`) and, for ``pg_*`` server functions, by prefix: every
  ``pg_*`` function not explicitly allowed is refused (files, settings, other sessions,
  replication, backups, signals, locks);
- the support functions (type input/output, operators' and indexes' implementations,
  aggregate states, encoding conversions), read from ``postgres_internal_functions.txt``
  (generated from ``pg_proc``) and refused as :attr:`PgRefusal.INTERNAL`.

User-defined functions are not in these tables: the guard resolves them in the database's
catalog and checks their definitions (:mod:`~d2_notebook.data.postgres_catalog`).
"""

from __future__ import annotations

import re
from enum import Enum
from functools import cache
from pathlib import Path

__all__ = ["ALLOWED", "SQL_SYNTAX", "PgRefusal", "classify"]


class PgRefusal(Enum):
    """Why a PostgreSQL function is refused (the text completes "refused because ...")."""

    RUNS_SQL_TEXT = "it runs SQL or a query named in text, which the guard cannot see"
    READS_FILES = "it reads or writes server files or large objects, or reveals their paths"
    READS_SETTINGS = "it reads or changes the server's settings or configuration files"
    READS_SESSIONS = "it shows other sessions, their queries, locks or statistics"
    REVEALS_SOURCE = ("it reveals definitions (function sources and argument defaults, "
                      "trigger arguments, column defaults, view definitions, constraint, "
                      "index, rule, partition and statistics expressions), whose literals "
                      "may hold credentials")
    CHANGES_STATE = ("it has side effects (sequences, transaction ids, locks, notifications, "
                     "the random seed, statistics, indexes)")
    ADMINISTERS = "it administers the server (backends, replication, WAL, backups, reloads)"
    SLEEPS = "it sleeps"
    REVEALS_ENVIRONMENT = "it reveals the server's network addresses or installation"
    OTHER_SERVERS = "it connects to another server"
    INTERNAL = ("it is an internal support function (type input/output, an operator's or "
                "index's implementation, an aggregate state)")
    UNCLASSIFIED = ("it is not in d2's reviewed PostgreSQL function table (extension "
                    "functions are not run; check the name)")


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


ALLOWED = _names("""
abbrev abs acldefault aclexplode acos acosd acosh age area array_agg array_append array_cat
array_dims array_fill array_length array_lower array_ndims array_position array_positions
array_prepend array_remove array_replace array_to_json array_to_string array_to_tsvector
array_upper ascii asin asind asinh atan atan2 atan2d atand atanh avg bit bit_and bit_count
bit_length bit_or bit_xor bool bool_and bool_or bound_box box bpchar broadcast btrim
cardinality cash_words cbrt ceil ceiling center char char_length character_length chr cidr
circle clock_timestamp col_description concat concat_ws convert convert_from convert_to corr
cos cosd cosh cot cotd count covar_pop covar_samp cume_dist current_database current_query
current_schema current_schemas current_user date date_bin date_part date_trunc
datemultirange daterange decode degrees dense_rank diagonal diameter div encode enum_first
enum_last enum_range every exp extract factorial family first_value float4 float8 floor
format format_type gcd gen_random_uuid generate_series generate_subscripts get_bit get_byte
get_current_ts_config getdatabaseencoding getpgusername has_any_column_privilege
has_column_privilege has_database_privilege has_foreign_data_wrapper_privilege
has_function_privilege has_language_privilege has_parameter_privilege has_schema_privilege
has_sequence_privilege has_server_privilege has_table_privilege has_tablespace_privilege
has_type_privilege height host hostmask inet_merge inet_same_family initcap int2 int4
int4multirange int4range int8 int8multirange int8range interval is_normalized isclosed
isempty isfinite ishorizontal isopen isparallel isperp isvertical json_agg
json_array_elements json_array_elements_text json_array_length json_build_array
json_build_object json_each json_each_text json_extract_path json_extract_path_text
json_object json_object_agg json_object_keys json_populate_record json_populate_recordset
json_strip_nulls json_to_record json_to_recordset json_to_tsvector json_typeof jsonb_agg
jsonb_array_elements jsonb_array_elements_text jsonb_array_length jsonb_build_array
jsonb_build_object jsonb_concat jsonb_contains jsonb_each jsonb_each_text jsonb_exists
jsonb_extract_path jsonb_extract_path_text jsonb_insert jsonb_object jsonb_object_agg
jsonb_object_keys jsonb_path_exists jsonb_path_exists_tz jsonb_path_match
jsonb_path_match_tz jsonb_path_query jsonb_path_query_array jsonb_path_query_array_tz
jsonb_path_query_first jsonb_path_query_first_tz jsonb_path_query_tz jsonb_populate_record
jsonb_populate_recordset jsonb_pretty jsonb_set jsonb_set_lax jsonb_strip_nulls
jsonb_to_record jsonb_to_recordset jsonb_to_tsvector jsonb_typeof justify_days justify_hours
justify_interval lag last_value lcm lead left length like like_escape line ln log log10
lower lower_inc lower_inf lpad lseg ltrim macaddr macaddr8 make_date make_interval make_time
make_timestamp make_timestamptz makeaclitem masklen max md5 min min_scale mod mode money
multirange name netmask network normalize notlike now npoints nth_value ntile num_nonnulls
num_nulls numeric nummultirange numnode numrange obj_description octet_length oid
oidvectortypes overlaps overlay parse_ident path pclose percent_rank percentile_cont
percentile_disc phraseto_tsquery pi plainto_tsquery point polygon popen position pow power
quote_ident quote_literal quote_nullable radians radius random range_agg range_intersect_agg
range_merge rank regclass regexp_count regexp_instr regexp_like regexp_match regexp_matches
regexp_replace regexp_split_to_array regexp_split_to_table regexp_substr regr_avgx regr_avgy
regr_count regr_intercept regr_r2 regr_slope regr_sxx regr_sxy regr_syy repeat replace
reverse right round row_number row_security_active row_to_json rpad rtrim scale session_user
set_bit set_byte set_masklen setweight sha224 sha256 sha384 sha512 shobj_description sign
similar_escape similar_to_escape sin sind sinh slope split_part sqrt starts_with
statement_timestamp stddev stddev_pop stddev_samp string_agg string_to_array string_to_table
strip strpos substr substring sum tan tand tanh text textlen time timeofday timestamp
timestamptz timetz timezone to_ascii to_char to_date to_hex to_json to_jsonb to_number
to_regclass to_regcollation to_regnamespace to_regoper to_regoperator to_regproc
to_regprocedure to_regrole to_regtype to_timestamp to_tsquery to_tsvector
transaction_timestamp translate trim_array trim_scale trunc ts_debug ts_delete ts_filter
ts_headline ts_lexize ts_parse ts_rank ts_rank_cd ts_token_type tsmultirange tsquery_phrase
tsrange tstzmultirange tstzrange tsvector_to_array unistr unnest upper upper_inc upper_inf
var_pop var_samp varbit varchar variance version websearch_to_tsquery width width_bucket xid
xml xml_is_well_formed xml_is_well_formed_content xml_is_well_formed_document xmlagg
xmlcomment xmlconcat2 xmlexists xpath xpath_exists

pg_backend_pid pg_char_to_encoding pg_client_encoding pg_collation_for
pg_collation_is_visible pg_column_compression pg_column_is_updatable pg_column_size
pg_conf_load_time pg_conversion_is_visible pg_database_size pg_describe_object
pg_encoding_max_length pg_encoding_to_char pg_function_is_visible
pg_get_catalog_foreign_keys pg_get_function_identity_arguments pg_get_function_result
pg_get_keywords pg_get_object_address pg_get_replica_identity_index pg_get_serial_sequence
pg_get_userbyid pg_has_role pg_identify_object pg_identify_object_as_address
pg_index_column_has_property pg_index_has_property pg_indexam_has_property pg_indexes_size
pg_input_is_valid pg_is_in_recovery pg_is_other_temp_schema pg_jit_available
pg_my_temp_schema pg_opclass_is_visible pg_operator_is_visible pg_opfamily_is_visible
pg_options_to_table pg_partition_ancestors pg_partition_root pg_partition_tree
pg_postmaster_start_time pg_relation_is_updatable pg_relation_size pg_size_bytes
pg_size_pretty pg_sleep pg_statistics_obj_is_visible pg_table_is_visible pg_table_size
pg_timezone_abbrevs pg_timezone_names pg_total_relation_size pg_ts_config_is_visible
pg_ts_dict_is_visible pg_ts_parser_is_visible pg_ts_template_is_visible pg_type_is_visible
pg_typeof
""")
"""Reviewed functions (PostgreSQL 15): callable in expressions and, where they return
sets, in FROM (the guard's table-function list decides that)."""

SQL_SYNTAX = _names("""
cast coalesce nullif greatest least exists any all some row array case trim collate grouping
filter current_date current_time current_timestamp localtime localtimestamp current_role
current_catalog user xmlelement xmlforest xmlpi xmlroot xmlserialize
""")
"""Constructs SQL writes like function calls but the parser handles itself (no ``pg_proc``
entry to look up; their arguments are checked like any other expression)."""

_REFUSED: dict[str, PgRefusal] = {
    **dict.fromkeys(_names("""
        query_to_xml query_to_xmlschema query_to_xml_and_xmlschema cursor_to_xml
        cursor_to_xmlschema table_to_xml table_to_xmlschema table_to_xml_and_xmlschema
        schema_to_xml schema_to_xmlschema schema_to_xml_and_xmlschema database_to_xml
        database_to_xmlschema database_to_xml_and_xmlschema ts_stat ts_rewrite querytree
        xmlparse xmlvalidate"""), PgRefusal.RUNS_SQL_TEXT),
    **dict.fromkeys(_names("""
        lo_close lo_creat lo_create lo_export lo_from_bytea lo_get lo_import lo_lseek
        lo_lseek64 lo_open lo_put lo_tell lo_tell64 lo_truncate lo_truncate64 lo_unlink loread
        lowrite pg_read_file pg_read_file_old pg_read_binary_file pg_stat_file
        pg_relation_filepath pg_relation_filenode pg_filenode_relation pg_tablespace_location
        pg_current_logfile pg_tablespace_databases"""), PgRefusal.READS_FILES),
    **dict.fromkeys(_names("""
        current_setting set_config pg_show_all_settings pg_show_all_file_settings
        pg_settings_get_flags pg_hba_file_rules pg_ident_file_mappings pg_config
        pg_control_checkpoint pg_control_init pg_control_recovery pg_control_system"""),
        PgRefusal.READS_SETTINGS),
    **dict.fromkeys(_names("""
        pg_lock_status pg_blocking_pids pg_safe_snapshot_blocking_pids pg_cursor
        pg_prepared_statement pg_prepared_xact pg_listening_channels
        pg_isolation_test_session_is_blocked pg_get_backend_memory_contexts
        pg_notification_queue_usage pg_get_shmem_allocations pg_trigger_depth
        pg_event_trigger_ddl_commands pg_event_trigger_dropped_objects
        pg_event_trigger_table_rewrite_oid pg_event_trigger_table_rewrite_reason"""),
        PgRefusal.READS_SESSIONS),
    **dict.fromkeys(_names("""
        pg_get_functiondef pg_get_function_sqlbody pg_get_function_arg_default
        pg_get_function_arguments pg_get_triggerdef pg_get_expr pg_get_constraintdef
        pg_get_indexdef pg_get_ruledef pg_get_partkeydef pg_get_partition_constraintdef
        pg_get_statisticsobjdef pg_get_statisticsobjdef_columns
        pg_get_statisticsobjdef_expressions pg_get_viewdef"""), PgRefusal.REVEALS_SOURCE),
    **dict.fromkeys(_names("""
        nextval setval currval lastval setseed txid_current txid_current_if_assigned
        txid_current_snapshot txid_snapshot_xip txid_snapshot_xmax txid_snapshot_xmin
        txid_status txid_visible_in_snapshot mxid_age brin_desummarize_range
        brin_summarize_new_values brin_summarize_range gin_clean_pending_list pg_notify
        pg_export_snapshot pg_current_xact_id pg_current_xact_id_if_assigned
        pg_current_snapshot pg_snapshot_xip pg_snapshot_xmax pg_snapshot_xmin
        pg_visible_in_snapshot pg_xact_status pg_xact_commit_timestamp
        pg_xact_commit_timestamp_origin pg_last_committed_xact pg_sequence_last_value
        pg_sequence_parameters pg_nextoid pg_advisory_lock pg_advisory_lock_shared
        pg_advisory_unlock pg_advisory_unlock_all pg_advisory_unlock_shared
        pg_advisory_xact_lock pg_advisory_xact_lock_shared pg_try_advisory_lock
        pg_try_advisory_lock_shared pg_try_advisory_xact_lock pg_try_advisory_xact_lock_shared
        pg_stat_clear_snapshot pg_stat_force_next_flush"""), PgRefusal.CHANGES_STATE),
    **dict.fromkeys(_names("pg_sleep_for pg_sleep_until"), PgRefusal.SLEEPS),
    **dict.fromkeys(_names("""
        inet_server_addr inet_server_port inet_client_addr inet_client_port
        pg_available_extensions pg_available_extension_versions pg_extension_update_paths
        pg_extension_config_dump pg_get_wal_resource_managers pg_collation_actual_version
        pg_database_collation_actual_version pg_import_system_collations"""),
        PgRefusal.REVEALS_ENVIRONMENT),
    **dict.fromkeys(_names("""
        amvalidate fmgr_c_validator fmgr_internal_validator fmgr_sql_validator
        plpgsql_validator postgresql_fdw_validator satisfies_hash_partition currtid2
        nameconcatoid in_range btequalimage btvarstrequalimage pg_mcv_list_items
        pg_relation_is_publishable pg_get_publication_tables pg_indexam_progress_phasename
        pg_stop_making_pinned_objects pg_get_multixact_members"""), PgRefusal.INTERNAL),
}
_REFUSED_PREFIXES: tuple[tuple[str, PgRefusal], ...] = (
    ("pg_ls_", PgRefusal.READS_FILES),
    ("pg_read_", PgRefusal.READS_FILES),
    ("lo_", PgRefusal.READS_FILES),
    ("pg_stat_", PgRefusal.READS_SESSIONS),
    ("dblink", PgRefusal.OTHER_SERVERS),
    ("postgres_fdw", PgRefusal.OTHER_SERVERS),
    ("binary_upgrade_", PgRefusal.ADMINISTERS),
    ("txid_", PgRefusal.CHANGES_STATE),
    ("pg_", PgRefusal.ADMINISTERS),  # every other server function: refused unless allowed
)
_SUPPORT = re.compile(
    r"_pg_.*|bt.*cmp|hash.*|.*_accum(_inv)?|.*_combine|.*larger|.*smaller|.*_subdiff"
    r"|.*_canonical|.*_transfn|.*_statefunc|int[248](inc|dec).*|.*cmp(_.*)?|spg_.*|gin_c.*"
    r"|float8_(regr|corr|covar|stddev|var|avg).*|int[248]_(sum|avg).*|int2int4_sum"
    r"|numeric_.*|interval_(avg|hash).*|.*_hash(_extended)?|d(exp|log1|log10|round|trunc)"
    r"|enum_send|xid8.*|macaddr8_set7bit")
"""Support functions whose names follow PostgreSQL's naming of them (comparators, hashes,
aggregate transitions, ``*larger``/``*smaller`` for min/max)."""


@cache
def _internal_names() -> frozenset[str]:
    text = (Path(__file__).with_name("postgres_internal_functions.txt")
            .read_text(encoding="utf-8"))
    return frozenset(line.strip().lower() for line in text.splitlines()
                     if line.strip() and not line.startswith("#"))


def classify(name: str) -> PgRefusal | None:
    """Why built-in function ``name`` is refused, or None if it is allowed.

    Args:
        name: The function's name as PostgreSQL resolves it (any case; compared lower).

    Returns:
        None for an allowed function or SQL construct; else the refusal family
        (:attr:`PgRefusal.UNCLASSIFIED` for a name in no table).
    """
    lowered = name.lower()
    if lowered in ALLOWED or lowered in SQL_SYNTAX:
        return None
    if lowered in _REFUSED:
        return _REFUSED[lowered]
    for prefix, refusal in _REFUSED_PREFIXES:
        if lowered.startswith(prefix):
            return refusal
    if lowered in _internal_names() or _SUPPORT.fullmatch(lowered):
        return PgRefusal.INTERNAL
    return PgRefusal.UNCLASSIFIED

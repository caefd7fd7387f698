"""Which DuckDB functions agent-written SQL may call: one reviewed allowlist.

Every function the installed DuckDB knows (``duckdb_functions()``: scalar, aggregate,
window, macro, table, table macro, pragma) is classified here, by the way SQL can use
it: in an expression, in ``FROM`` (a table function) or as a ``PRAGMA``. A name is
either allowed or refused with a :class:`Refusal` that says why; a name that is in
neither list (a new DuckDB's function, an extension's, a user's macro or Python UDF)
is refused as :attr:`Refusal.UNCLASSIFIED`, so an upgrade never silently widens the
policy (``tests/test_function_policy.py`` fails on any unclassified built-in).

The tables were generated once from ``duckdb_functions()`` of DuckDB 2.0.1 and then
reviewed by hand. Two name families are classified by prefix: the collations
(``collate_*``, ``icu_collate_*``: allowed) and DuckDB's planner internals (``__*``:
refused). Built-in macros are allowed only when their own definitions call allowed
functions only (checked by the same test).
"""

from __future__ import annotations

from enum import Enum

__all__ = ["FunctionUse", "Refusal", "allowed_names", "classify", "refused_names"]


class FunctionUse(Enum):
    """Where a function appears in a statement."""

    EXPRESSION = "expression"  # scalar, aggregate, window functions and macros
    TABLE = "table"  # table functions and table macros, in FROM
    PRAGMA = "pragma"  # PRAGMA name(...)


class Refusal(Enum):
    """Why a function is refused (the text completes "refused because ...")."""

    RUNS_SQL_TEXT = "it parses, plans or runs SQL text it is given"
    READS_FILES = "it reads files or URLs (or a table named by a string)"
    READS_SETTINGS = "it reads settings, variables or secrets"
    READS_LOGS = "it reads logs, profiles or other statements' text"
    CHANGES_STATE = "it has side effects (sequences, logs, checkpoints, settings, the seed)"
    SLEEPS = "it sleeps"
    LOADS_EXTENSIONS = "it can install or load extensions or external resources"
    REVEALS_ENVIRONMENT = "it reveals the environment (files, memory, extensions on disk)"
    SCANS_MEMORY = "it scans Python objects or raw memory"
    INTERNAL = "it is an internal function of DuckDB's planner"
    UNCLASSIFIED = (
        "it is not in d2's reviewed function table (extension and user-defined functions "
        "are not run; check the name)"
    )


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _each(reason: Refusal, text: str) -> dict[str, Refusal]:
    return dict.fromkeys(text.split(), reason)


_BINDER_FUNCTIONS = frozenset({"unnest", "unlist", "grouping", "grouping_id", "try"})
"""Written like functions but bound by DuckDB itself (not in ``duckdb_functions()``)."""
_OPERATORS_WITH_SPACES = frozenset({"is distinct from", "is not distinct from"})
_ALLOWED_PREFIXES = ("collate_", "icu_collate_")
_INTERNAL_PREFIX = "__"

# --- the reviewed tables (generated from DuckDB 2.0.1, reviewed by hand) ---------------
_ALLOWED_EXPRESSION = _names("""
!= !__postfix !~~ !~~* % & && * ** + - ->> / // < <-> << <= <=> <@ = > >= >> @ @> ^ ^@ abs
acos acosh add age aggregate ago alias any_value apply approx_count_distinct approx_quantile
approx_top_k arbitrary arg_max arg_max_null arg_max_nulls_last arg_min arg_min_null
arg_min_nulls_last argmax argmin array_agg array_aggr array_aggregate array_append
array_apply array_cat array_concat array_contains array_cosine_distance
array_cosine_similarity array_cross_product array_distance array_distinct array_dot_product
array_extract array_filter array_grade_up array_has array_has_all array_has_any
array_indexof array_inner_product array_intersect array_length array_negative_dot_product
array_negative_inner_product array_pop_back array_pop_front array_position array_prepend
array_push_back array_push_front array_reduce array_resize array_reverse array_reverse_sort
array_select array_slice array_sort array_to_json array_to_string
array_to_string_comma_default array_transform array_unique array_value array_where array_zip
ascii asin asinh assert_true atan atan2 atanh avg bar base64 bin binom bit_and bit_count
bit_length bit_or bit_position bit_xor bitstring bitstring_agg bitstring_byte_comparable
bool_and bool_or can_cast_implicitly cardinality cast_to_type cbrt ceil ceiling century
char_length character_length chr col_description combine combine_aggr concat concat_ws
constant_or_null contains corr cos cosh cot count count_if count_star countif covar_pop
covar_samp create_sort_key cume_dist current_catalog current_connection_id current_database
current_date current_localtime current_localtimestamp current_query current_query_id
current_role current_schema current_schemas current_transaction_id current_user currval
damerau_levenshtein date_add date_diff date_part date_sub date_trunc datediff datepart
datesub datetrunc day dayname dayofmonth dayofweek dayofyear days_in_month decade
decimal_average decimal_division decode degrees dense_rank divide editdist3 element_at
encode ends_with entropy enum_code enum_first enum_last enum_range enum_range_boundary epoch
epoch_ms epoch_ns epoch_us equi_width_bins era error even exp factorial favg fdiv fill
filter finalize first first_value flatten floor fmod format format_bytes format_pg_type
format_type formatreadabledecimalsize formatreadablesize from_base64 from_binary from_hex
from_json from_json_strict fsum gamma gcd gen_random_uuid generate_series
generate_subscripts geomean geometric_mean get_bit get_current_time
get_current_timestamp get_type grade_up greatest greatest_common_divisor group_concat
hamming has_any_column_privilege has_column_privilege has_database_privilege
has_foreign_data_wrapper_privilege has_function_privilege has_language_privilege
has_schema_privilege has_sequence_privilege has_server_privilege has_table_privilege
has_tablespace_privilege hash hex histogram histogram_exact hive_partition_component hour
icu_sort_key if ilike_escape in_search_path index_key inet_client_addr inet_client_port
inet_server_addr inet_server_port instr invoke
is_histogram_other_bin isfinite isinf isnan isodow isoyear jaccard jaro_similarity
jaro_winkler_similarity json json_array json_array_length json_contains
json_copy_strftime_if_date json_copy_strftime_if_timestamp json_deep_merge json_exists
json_extract json_extract_path json_extract_path_text json_extract_string json_group_array
json_group_object json_group_structure json_insert json_keys json_merge_patch
json_merge_patch_diff json_normalize json_object json_pretty json_quote json_remove
json_replace json_set json_strip_nulls json_structure json_transform json_transform_strict
json_type json_valid json_value julian kahan_sum kurtosis kurtosis_pop lag last last_day
last_value lcase lcm lead least least_common_multiple left left_grapheme len length
length_grapheme levenshtein lgamma like_escape list list_aggr list_aggregate list_any_value
list_append list_apply list_approx_count_distinct list_avg list_bit_and list_bit_or
list_bit_xor list_bool_and list_bool_or list_cat list_concat list_contains
list_cosine_distance list_cosine_similarity list_count list_distance list_distinct
list_dot_product list_element list_entropy list_extract list_filter list_first list_grade_up
list_has list_has_all list_has_any list_histogram list_indexof list_inner_product
list_intersect list_kurtosis list_kurtosis_pop list_last list_mad list_max list_median
list_min list_mode list_negative_dot_product list_negative_inner_product list_pack
list_position list_prepend list_product list_reduce list_resize list_reverse
list_reverse_sort list_select list_sem list_skewness list_slice list_sort list_stddev_pop
list_stddev_samp list_string_agg list_sum list_transform list_unique list_value list_var_pop
list_var_samp list_where list_zip listagg ln log log10 log2 lower lpad ltrim lttb mad
make_date make_time make_timestamp make_timestamp_ms make_timestamp_ns make_timestamptz map
map_concat map_contains map_contains_entry map_contains_value map_entries map_extract
map_extract_value map_from_entries map_keys map_to_pg_oid map_type_id_to_pg_oid map_values
max max_by md5 md5_number md5_number_lower md5_number_upper mean median microsecond
millennium millisecond min min_by minute mismatches mod mode month monthname multiply
nanosecond nextafter nfc_normalize normalized_interval not_ilike_escape not_like_escape now
nth_value ntile nullif obj_description octet_length ord overlay parse_dirname parse_dirpath
parse_duckdb_log_message parse_filename parse_formatted_bytes parse_path path_join
percent_rank pg_collation_is_visible pg_conf_load_time pg_conversion_is_visible
pg_function_is_visible pg_get_constraintdef pg_get_expr pg_get_viewdef pg_has_role
pg_is_other_temp_schema pg_my_temp_schema pg_opclass_is_visible pg_operator_is_visible
pg_opfamily_is_visible pg_postmaster_start_time pg_size_pretty pg_table_is_visible
pg_ts_config_is_visible pg_ts_dict_is_visible pg_ts_parser_is_visible
pg_ts_template_is_visible pg_type_is_visible pg_typeof pi position pow power prefix printf
product quantile quantile_cont quantile_disc quarter radians random range rank rank_dense
reduce regexp_escape regexp_extract regexp_extract_all regexp_full_match regexp_matches
regexp_replace regexp_split_to_array regexp_split_to_table regr_avgx regr_avgy regr_count
regr_intercept regr_r2 regr_slope regr_sxx regr_sxy regr_syy remap_struct repeat replace
replace_type reservoir_quantile reverse right right_grapheme round round_even roundbankers
row row_number row_to_json rpad rtrim second sem session_user set_bit sha1 sha256
shobj_description sign signbit sin sinh skewness split split_part sqrt st_asbinary
st_asgeojson st_astext st_aswkb st_aswkt st_crs st_geomfromgeojson st_geomfromwkb
st_intersects_extent st_setcrs starts_with stats stddev stddev_pop stddev_samp str_split
str_split_regex strftime string_agg string_split string_split_regex string_to_array
strip_accents strlen strpos strptime struct_concat struct_contains struct_extract
struct_extract_at struct_has struct_indexof struct_insert struct_keys struct_pack
struct_position struct_update struct_values substr substring substring_grapheme subtract
suffix sum sum_no_overflow sumkahan switch tan tanh time_bucket timetz_byte_comparable
timezone timezone_hour timezone_minute to_aggregate_state to_base to_base64 to_binary
to_centuries to_days to_decades to_hex to_hours to_json to_microseconds to_millennia
to_milliseconds to_minutes to_months to_quarters to_seconds to_timestamp to_weeks to_years
today transaction_timestamp translate trim trunc try_strptime txid_current typeof ucase
unbin unhex unicode union_extract union_tag union_value unpivot_list upper url_decode
url_encode user uuid uuid_extract_timestamp uuid_extract_version uuidv4 uuidv7 var_pop
var_samp variance variant_array_length variant_bytes_to_variant variant_comparator
variant_contains variant_exists variant_extract variant_extract_string variant_group_array
variant_group_object variant_keys variant_normalize variant_to_parquet_variant variant_type
variant_typeof vector_type version vertex_extract wavg week weekday weekofyear weighted_avg
xor year yearweek | || ~ ~~ ~~* ~~~
""")
_REFUSED_EXPRESSION: dict[str, Refusal] = {
    **_each(
        Refusal.READS_SETTINGS,
        """
        current_setting getvariable
    """,
    ),
    **_each(
        Refusal.RUNS_SQL_TEXT,
        """
        json_deserialize_sql json_serialize_plan json_serialize_sql
    """,
    ),
    **_each(
        Refusal.LOADS_EXTENSIONS,
        """
        make_type
    """,
    ),
    **_each(
        Refusal.CHANGES_STATE,
        """
        nextval setseed setval write_log
    """,
    ),
    **_each(
        Refusal.SLEEPS,
        """
        pg_sleep sleep_ms
    """,
    ),
    **_each(
        Refusal.REVEALS_ENVIRONMENT,
        """
        get_block_size
    """,
    ),
}
_ALLOWED_TABLE = _names("""
duckdb_approx_database_count duckdb_available_metrics duckdb_columns duckdb_connection_count
duckdb_constraints duckdb_coordinate_systems duckdb_dependencies
duckdb_dialects duckdb_functions duckdb_indexes duckdb_keywords duckdb_optimizers
duckdb_schemas duckdb_secret_type_parameters duckdb_secret_types duckdb_sequences
duckdb_tables duckdb_triggers duckdb_types duckdb_views generate_series icu_calendar_names
json_each json_tree pg_timezone_names pragma_collations pragma_platform
pragma_show pragma_table_info pragma_version range repeat repeat_row
test_all_types test_vector_types unnest
""")
_REFUSED_TABLE: dict[str, Refusal] = {
    **_each(
        Refusal.LOADS_EXTENSIONS,
        """
        add_grammar_extension create_external_resource deregister_external_resource
        destroy_external_resource duckdb_external_resource_types duckdb_external_resources
        duckdb_grammar_extensions register_external_resource register_external_resource_type
        remove_grammar_extension
    """,
    ),
    **_each(
        Refusal.SCANS_MEMORY,
        """
        arrow_scan arrow_scan_dumb pandas_scan python_arrow_scan python_map_function
        seq_scan
    """,
    ),
    **_each(
        Refusal.CHANGES_STATE,
        """
        checkpoint disable_logging disable_profiling enable_logging enable_profiling
        force_checkpoint truncate_duckdb_logs
    """,
    ),
    **_each(
        Refusal.REVEALS_ENVIRONMENT,
        """
        duckdb_databases duckdb_eviction_queues duckdb_extensions duckdb_external_file_cache
        duckdb_memory duckdb_temporary_files pragma_database_size pragma_metadata_info
        pragma_storage_info pragma_user_agent
    """,
    ),
    **_each(
        Refusal.READS_SETTINGS,
        """
        duckdb_extension_repositories duckdb_profiling_settings duckdb_secrets
        duckdb_settings duckdb_variables which_secret
    """,
    ),
    **_each(
        Refusal.READS_LOGS,
        """
        duckdb_live_query_metrics duckdb_log_contexts duckdb_logs duckdb_logs_parsed
        duckdb_prepared_statements
    """,
    ),
    **_each(
        Refusal.READS_FILES,
        """
        duckdb_table_sample glob histogram histogram_values parquet_bloom_probe
        parquet_file_metadata parquet_full_metadata parquet_kv_metadata parquet_metadata
        parquet_page_index parquet_scan parquet_schema read_blob read_csv read_csv_auto
        read_duckdb read_json read_json_auto read_json_objects read_json_objects_auto
        read_ndjson read_ndjson_auto read_ndjson_objects read_parquet read_single_csv_file
        read_single_json_file read_single_parquet_file read_text sniff_csv summary
    """,
    ),
    **_each(
        Refusal.RUNS_SQL_TEXT,
        """
        json_execute_serialized_sql query query_table
    """,
    ),
}
_ALLOWED_PRAGMA = _names("""
collations functions platform show show_databases show_tables show_tables_expanded
table_info version
""")
_REFUSED_PRAGMA: dict[str, Refusal] = {
    **_each(
        Refusal.READS_SETTINGS,
        """
        add_parquet_key
    """,
    ),
    **_each(
        Refusal.CHANGES_STATE,
        """
        copy_database disable_checkpoint_on_shutdown disable_object_cache disable_optimizer
        disable_print_progress_bar disable_profile disable_profiling disable_progress_bar
        disable_verification disable_verify_parallelism enable_checkpoint_on_shutdown
        enable_object_cache enable_optimizer enable_print_progress_bar enable_profile
        enable_profiling enable_progress_bar enable_verification force_checkpoint
        import_database verify_parallelism
    """,
    ),
    **_each(
        Refusal.REVEALS_ENVIRONMENT,
        """
        database_list database_size extension_versions metadata_info storage_info user_agent
    """,
    ),
    **_each(
        Refusal.RUNS_SQL_TEXT,
        """
        json_execute_serialized_sql
    """,
    ),
}

_ALLOWED = {
    FunctionUse.EXPRESSION: _ALLOWED_EXPRESSION | _BINDER_FUNCTIONS | _OPERATORS_WITH_SPACES,
    FunctionUse.TABLE: _ALLOWED_TABLE,
    FunctionUse.PRAGMA: _ALLOWED_PRAGMA,
}
_REFUSED = {
    FunctionUse.EXPRESSION: _REFUSED_EXPRESSION,
    FunctionUse.TABLE: _REFUSED_TABLE,
    FunctionUse.PRAGMA: _REFUSED_PRAGMA,
}


def classify(name: str, use: FunctionUse) -> Refusal | None:
    """``None`` when ``name`` may be called this way, else why it is refused.

    Args:
        name: The function name as written (any case; a schema prefix removed).
        use: Where it appears in the statement.
    """
    key = name.lower()
    if key in _REFUSED[use]:
        return _REFUSED[use][key]
    if key in _ALLOWED[use]:
        return None
    if use is FunctionUse.EXPRESSION:
        if key.startswith(_INTERNAL_PREFIX):
            return Refusal.INTERNAL
        if key.startswith(_ALLOWED_PREFIXES):
            return None
    return Refusal.UNCLASSIFIED


def allowed_names(use: FunctionUse) -> frozenset[str]:
    """The names allowed for ``use`` (the collation prefix family not listed)."""
    return _ALLOWED[use]


def refused_names(use: FunctionUse) -> dict[str, Refusal]:
    """The names refused for ``use`` with their reasons (internals not listed)."""
    return dict(_REFUSED[use])

/* Unit tests of manifests and indexes (registry/manifest.c): the four
 * media types from Content-Type or the body, schema 1 and artifacts
 * refused by name, every layer's type, digest and size checked, the
 * bounds, and the node's platform picked from an index. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "manifest.h"

#define D1 "sha256:1111111111111111111111111111111111111111111111111111111111111111"
#define D2 "sha256:2222222222222222222222222222222222222222222222222222222222222222"
#define D3 "sha256:3333333333333333333333333333333333333333333333333333333333333333"
#define D4 "sha256:4444444444444444444444444444444444444444444444444444444444444444"

#define DOCKER_V2 "application/vnd.docker.distribution.manifest.v2+json"
#define DOCKER_LIST "application/vnd.docker.distribution.manifest.list.v2+json"
#define OCI_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define OCI_INDEX "application/vnd.oci.image.index.v1+json"
#define DOCKER_CONFIG "application/vnd.docker.container.image.v1+json"
#define OCI_CONFIG "application/vnd.oci.image.config.v1+json"
#define DOCKER_GZIP "application/vnd.docker.image.rootfs.diff.tar.gzip"
#define OCI_ZSTD "application/vnd.oci.image.layer.v1.tar+zstd"

/* A docker v2 schema 2 manifest: config, then two gzip layers. */
static const char docker_v2[] =
	"{\"schemaVersion\": 2, \"mediaType\": \"" DOCKER_V2 "\",\n"
	" \"config\": {\"mediaType\": \"" DOCKER_CONFIG "\", \"size\": 1469, \"digest\": \"" D1 "\"},\n"
	" \"layers\": [{\"mediaType\": \"" DOCKER_GZIP "\", \"size\": 29534055, \"digest\": \"" D2 "\"},\n"
	"            {\"mediaType\": \"" DOCKER_GZIP "\", \"size\": 180, \"digest\": \"" D3 "\"}]}";

/* An OCI image manifest with one layer of type `layer` and config type `config`. */
static char *oci_manifest(const char *media_type, const char *config, const char *layer,
			  const char *digest, const char *size)
{
	char *s = NULL;

	assert_true(asprintf(&s, "{\"schemaVersion\":2%s%s%s,\"config\":{\"mediaType\":\"%s\","
			     "\"digest\":\"" D1 "\",\"size\":2},\"layers\":[{\"mediaType\":\"%s\","
			     "\"digest\":\"%s\",\"size\":%s}]}",
			     media_type != NULL ? ",\"mediaType\":\"" : "",
			     media_type != NULL ? media_type : "", media_type != NULL ? "\"" : "",
			     config, layer, digest, size) > 0);
	return s;
}

/* What docker buildx pushes: amd64, arm64/v8, arm/v7, and an attestation
 * manifest for each, platform unknown/unknown. */
static const char buildx_index[] =
	"{\"schemaVersion\":2,\"mediaType\":\"" OCI_INDEX "\",\"manifests\":[\n"
	"{\"mediaType\":\"" OCI_MANIFEST "\",\"digest\":\"" D1 "\",\"size\":100,"
	"  \"platform\":{\"architecture\":\"amd64\",\"os\":\"linux\"}},\n"
	"{\"mediaType\":\"" OCI_MANIFEST "\",\"digest\":\"" D2 "\",\"size\":100,"
	"  \"platform\":{\"architecture\":\"arm64\",\"os\":\"linux\",\"variant\":\"v8\"}},\n"
	"{\"mediaType\":\"" OCI_MANIFEST "\",\"digest\":\"" D3 "\",\"size\":100,"
	"  \"platform\":{\"architecture\":\"arm\",\"os\":\"linux\",\"variant\":\"v7\"}},\n"
	"{\"mediaType\":\"" OCI_MANIFEST "\",\"digest\":\"" D4 "\",\"size\":566,"
	"  \"annotations\":{\"vnd.docker.reference.digest\":\"" D1 "\","
	"  \"vnd.docker.reference.type\":\"attestation-manifest\"},"
	"  \"platform\":{\"architecture\":\"unknown\",\"os\":\"unknown\"}}]}";

static void parse_ok(const char *body, const char *content_type, struct manifest *m)
{
	struct err e = { 0 };

	if (manifest_parse(body, strlen(body), content_type, "img", m, &e) != 0)
		fail_msg("%s", e.msg);
}

/* The message of a body that must be refused. */
static const char *parse_bad(const char *body, const char *content_type)
{
	static struct err e;
	struct manifest m;

	memset(&e, 0, sizeof(e));
	assert_int_equal(manifest_parse(body, strlen(body), content_type, "img", &m, &e), -1);
	assert_int_equal(e.code, EXIT_CTRUN);
	assert_null(m.layers);
	assert_null(m.entries);
	return e.msg;
}

static void test_docker_v2_manifest_layers_bottom_first(void **state)
{
	struct manifest m;

	(void)state;
	parse_ok(docker_v2, DOCKER_V2, &m);
	assert_int_equal(m.kind, MANIFEST_IMAGE);
	assert_string_equal(m.media_type, DOCKER_V2);
	assert_string_equal(m.config.digest, D1);
	assert_int_equal(m.config.size, 1469);
	assert_int_equal(m.nlayers, 2);
	assert_string_equal(m.layers[0].digest, D2);
	assert_int_equal(m.layers[0].size, 29534055);
	assert_string_equal(m.layers[1].digest, D3);
	assert_int_equal(layer_compression_of(m.layers[0].media_type), LAYER_GZIP);
	manifest_free(&m);
	assert_null(m.layers);
}

static void test_oci_manifest_zstd_and_tar_layers(void **state)
{
	char *a = oci_manifest(OCI_MANIFEST, OCI_CONFIG, OCI_ZSTD, D2, "10"),
	     *b = oci_manifest(OCI_MANIFEST, OCI_CONFIG, "application/vnd.oci.image.layer.v1.tar",
			       D2, "0");
	struct manifest m;

	(void)state;
	parse_ok(a, OCI_MANIFEST, &m);
	assert_int_equal(layer_compression_of(m.layers[0].media_type), LAYER_ZSTD);
	manifest_free(&m);
	parse_ok(b, OCI_MANIFEST, &m);
	assert_int_equal(layer_compression_of(m.layers[0].media_type), LAYER_TAR);
	assert_int_equal(m.layers[0].size, 0);
	manifest_free(&m);
	assert_int_equal(layer_compression_of("application/vnd.oci.image.layer.v1.tar+gzip"),
			 LAYER_GZIP);
	free(a);
	free(b);
}

static void test_content_type_parameters_and_case_ignored(void **state)
{
	struct manifest m;

	(void)state;
	parse_ok(docker_v2, " application/vnd.docker.distribution.manifest.V2+json; charset=utf-8", &m);
	assert_string_equal(m.media_type, DOCKER_V2);
	manifest_free(&m);
}

static void test_generic_content_type_uses_body_media_type(void **state)
{
	struct manifest m;

	(void)state;
	parse_ok(docker_v2, "application/json", &m);
	assert_string_equal(m.media_type, DOCKER_V2);
	manifest_free(&m);
	parse_ok(buildx_index, "text/plain; charset=utf-8", &m);
	assert_int_equal(m.kind, MANIFEST_INDEX);
	manifest_free(&m);
	parse_ok(buildx_index, NULL, &m);
	assert_string_equal(m.media_type, OCI_INDEX);
	manifest_free(&m);
}

static void test_oci_body_without_media_type_inferred_from_shape(void **state)
{
	char *image = oci_manifest(NULL, OCI_CONFIG, OCI_ZSTD, D2, "1");
	static const char index[] = "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\""
		OCI_MANIFEST "\",\"digest\":\"" D1 "\",\"size\":7}]}";
	struct manifest m;

	(void)state;
	parse_ok(image, "", &m);
	assert_string_equal(m.media_type, OCI_MANIFEST);
	manifest_free(&m);
	parse_ok(index, "application/json", &m);
	assert_string_equal(m.media_type, OCI_INDEX);
	assert_int_equal(m.nentries, 1);
	manifest_free(&m);
	assert_non_null(strstr(parse_bad("{\"schemaVersion\":2}", NULL),
			       "neither an image manifest nor an index"));
	free(image);
}

static void test_schema1_refused_by_name(void **state)
{
	static const char schema1[] = "{\"schemaVersion\":1,\"name\":\"x\",\"tag\":\"latest\","
		"\"fsLayers\":[{\"blobSum\":\"" D1 "\"}]}";
	static const char *const want =
		"img: schema 1 manifests are not supported; push the image again with a current tool";

	(void)state;
	assert_string_equal(parse_bad(schema1, "application/vnd.docker.distribution.manifest.v1+prettyjws"),
			    want);
	assert_string_equal(parse_bad(schema1, "application/vnd.docker.distribution.manifest.v1+json"),
			    want);
	assert_string_equal(parse_bad(schema1, "application/json"), want);
	assert_string_equal(parse_bad(schema1, NULL), want);
}

static void test_content_type_and_body_disagreeing_refused(void **state)
{
	(void)state;
	assert_non_null(strstr(parse_bad(docker_v2, OCI_INDEX), "served as " OCI_INDEX));
	assert_non_null(strstr(parse_bad(docker_v2, "application/vnd.oci.artifact.manifest.v1+json"),
			       "unsupported manifest type"));
}

static void test_artifact_config_is_not_a_container_image(void **state)
{
	char *helm = oci_manifest(OCI_MANIFEST, "application/vnd.cncf.helm.config.v1+json",
				  "application/vnd.cncf.helm.chart.content.v1.tar+gzip", D2, "5");

	(void)state;
	assert_string_equal(parse_bad(helm, OCI_MANIFEST),
			    "img is not a container image (config media type "
			    "application/vnd.cncf.helm.config.v1+json)");
	free(helm);
}

static void test_foreign_layer_refused_by_name(void **state)
{
	char *win = oci_manifest(DOCKER_V2, DOCKER_CONFIG,
				 "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip", D2, "9");
	char *nd = oci_manifest(OCI_MANIFEST, OCI_CONFIG,
				"application/vnd.oci.image.layer.nondistributable.v1.tar+gzip", D2, "9");

	(void)state;
	assert_non_null(strstr(parse_bad(win, DOCKER_V2), "foreign layer " D2 " not supported"));
	assert_non_null(strstr(parse_bad(nd, OCI_MANIFEST), "foreign layer " D2 " not supported"));
	free(win);
	free(nd);
}

static void test_unknown_layer_type_refused(void **state)
{
	char *s = oci_manifest(OCI_MANIFEST, OCI_CONFIG, "application/octet-stream", D2, "9");

	(void)state;
	assert_non_null(strstr(parse_bad(s, OCI_MANIFEST), "layers[0] has media type "
			       "application/octet-stream"));
	free(s);
}

static void test_digest_must_be_lowercase_sha256(void **state)
{
	static const char *const digests[] = {
		"sha256:AAAA111111111111111111111111111111111111111111111111111111111111",
		"sha256:111",
		"sha512:11111111111111111111111111111111111111111111111111111111111111111111111111"
		"111111111111111111111111111111111111111111111111111111",
		"md5:d41d8cd98f00b204e9800998ecf8427e",
		"",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(digests) / sizeof(*digests); i++) {
		char *s = oci_manifest(OCI_MANIFEST, OCI_CONFIG, OCI_ZSTD, digests[i], "1");

		assert_non_null(strstr(parse_bad(s, OCI_MANIFEST), "layers[0]: the digest is not sha256"));
		free(s);
	}
}

static void test_size_negative_huge_or_not_integer_refused(void **state)
{
	static const char *const sizes[] = { "-1", "1099511627777", "1.5", "\"12\"", "null" };

	(void)state;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(*sizes); i++) {
		char *s = oci_manifest(OCI_MANIFEST, OCI_CONFIG, OCI_ZSTD, D2, sizes[i]);

		assert_non_null(strstr(parse_bad(s, OCI_MANIFEST), "layers[0]"));
		free(s);
	}
}

static void test_too_many_layers_refused(void **state)
{
	static const char layer[] = "{\"mediaType\":\"" OCI_ZSTD "\",\"digest\":\"" D2 "\",\"size\":1},";
	size_t n = MANIFEST_LAYERS_MAX + 1, len = 0;
	char *s = malloc(256 + n * sizeof(layer));

	(void)state;
	len += (size_t)sprintf(s, "{\"schemaVersion\":2,\"config\":{\"mediaType\":\"" OCI_CONFIG
			       "\",\"digest\":\"" D1 "\",\"size\":2},\"layers\":[");
	for (size_t i = 0; i < n; i++)
		len += (size_t)sprintf(s + len, "%s", layer);
	sprintf(s + len - 1, "]}");
	assert_non_null(strstr(parse_bad(s, OCI_MANIFEST), "has 1001 layers, more than the 1000"));
	free(s);
}

static void test_body_read_by_length_not_nul(void **state)
{
	size_t len = strlen(docker_v2);
	char *body = malloc(len + 8);
	struct manifest m;
	struct err e = { 0 };

	(void)state;
	memcpy(body, docker_v2, len);
	memcpy(body + len, "garbage!", 8); /* no NUL anywhere */
	assert_int_equal(manifest_parse(body, len, DOCKER_V2, "img", &m, &e), 0);
	manifest_free(&m);
	/* The same bytes with the garbage inside the length: refused. */
	assert_int_equal(manifest_parse(body, len + 8, DOCKER_V2, "img", &m, &e), -1);
	assert_non_null(strstr(e.msg, "not valid JSON"));
	/* Cut short: refused. */
	assert_int_equal(manifest_parse(body, len - 1, DOCKER_V2, "img", &m, &e), -1);
	assert_non_null(strstr(e.msg, "ends too early"));
	free(body);
}

static void test_body_over_bound_refused(void **state)
{
	struct manifest m;
	struct err e = { 0 };

	(void)state;
	assert_int_equal(manifest_parse(docker_v2, MANIFEST_MAX + 1, DOCKER_V2, "img", &m, &e), -1);
	assert_non_null(strstr(e.msg, "larger than"));
}

static void test_index_picks_arm64_v8(void **state)
{
	struct manifest m;
	const struct descriptor *d;
	struct err e = { 0 };

	(void)state;
	parse_ok(buildx_index, OCI_INDEX, &m);
	assert_int_equal(m.nentries, 4);
	assert_int_equal(manifest_pick(&m, "arm64", "v8", "img", &d, &e), 0);
	assert_string_equal(d->digest, D2);
	/* arm64 without a variant is v8 too. */
	assert_int_equal(manifest_pick(&m, "arm64", "", "img", &d, &e), 0);
	assert_string_equal(d->digest, D2);
	assert_int_equal(manifest_pick(&m, "amd64", "", "img", &d, &e), 0);
	assert_string_equal(d->digest, D1);
	assert_int_equal(manifest_pick(&m, "arm", "v7", "img", &d, &e), 0);
	assert_string_equal(d->digest, D3);
	manifest_free(&m);
}

static void test_pick_prefers_exact_variant_over_none(void **state)
{
	static const char index[] = "{\"schemaVersion\":2,\"mediaType\":\"" DOCKER_LIST "\","
		"\"manifests\":[{\"mediaType\":\"" DOCKER_V2 "\",\"digest\":\"" D1 "\",\"size\":1,"
		"\"platform\":{\"architecture\":\"arm\",\"os\":\"linux\"}},"
		"{\"mediaType\":\"" DOCKER_V2 "\",\"digest\":\"" D2 "\",\"size\":1,"
		"\"platform\":{\"architecture\":\"arm\",\"os\":\"linux\",\"variant\":\"v7\"}},"
		"{\"mediaType\":\"" DOCKER_V2 "\",\"digest\":\"" D3 "\",\"size\":1,"
		"\"platform\":{\"architecture\":\"arm64\",\"os\":\"linux\",\"variant\":\"v9\"}}]}";
	struct manifest m;
	const struct descriptor *d;
	struct err e = { 0 };

	(void)state;
	parse_ok(index, DOCKER_LIST, &m);
	assert_int_equal(manifest_pick(&m, "arm", "v7", "img", &d, &e), 0);
	assert_string_equal(d->digest, D2);
	/* No v6 entry: the one without a variant fits. */
	assert_int_equal(manifest_pick(&m, "arm", "v6", "img", &d, &e), 0);
	assert_string_equal(d->digest, D1);
	/* arm64/v9 is not v8. */
	assert_int_equal(manifest_pick(&m, "arm64", "v8", "img", &d, &e), -1);
	manifest_free(&m);
}

static void test_pick_error_lists_platforms(void **state)
{
	static const char index[] = "{\"schemaVersion\":2,\"manifests\":["
		"{\"mediaType\":\"" OCI_MANIFEST "\",\"digest\":\"" D1 "\",\"size\":1,"
		"\"platform\":{\"architecture\":\"amd64\",\"os\":\"linux\"}},"
		"{\"mediaType\":\"" OCI_MANIFEST "\",\"digest\":\"" D2 "\",\"size\":1,"
		"\"platform\":{\"architecture\":\"ppc64le\",\"os\":\"linux\"}},"
		"{\"mediaType\":\"" OCI_MANIFEST "\",\"digest\":\"" D3 "\",\"size\":1,"
		"\"platform\":{\"architecture\":\"amd64\",\"os\":\"linux\"}},"
		"{\"mediaType\":\"" OCI_MANIFEST "\",\"digest\":\"" D4 "\",\"size\":1,"
		"\"platform\":{\"architecture\":\"unknown\",\"os\":\"unknown\"}}]}";
	struct manifest m;
	const struct descriptor *d;
	struct err e = { 0 };

	(void)state;
	parse_ok(index, NULL, &m);
	assert_int_equal(manifest_pick(&m, "arm64", "v8", "nvcr.io/x:1", &d, &e), -1);
	assert_null(d);
	assert_int_equal(e.code, EXIT_CTRUN);
	assert_string_equal(e.msg, "no linux/arm64/v8 image in nvcr.io/x:1; it has linux/amd64, "
			    "linux/ppc64le");
	manifest_free(&m);
}

static void test_pick_skips_other_os_and_non_manifests(void **state)
{
	static const char index[] = "{\"schemaVersion\":2,\"manifests\":["
		"{\"mediaType\":\"" OCI_MANIFEST "\",\"digest\":\"" D1 "\",\"size\":1,"
		"\"platform\":{\"architecture\":\"amd64\",\"os\":\"windows\"}},"
		"{\"mediaType\":\"" OCI_INDEX "\",\"digest\":\"" D2 "\",\"size\":1,"
		"\"platform\":{\"architecture\":\"amd64\",\"os\":\"linux\"}},"
		"{\"digest\":\"" D3 "\",\"size\":1,"
		"\"platform\":{\"architecture\":\"amd64\",\"os\":\"linux\"}}]}";
	struct manifest m;
	const struct descriptor *d;
	struct err e = { 0 };

	(void)state;
	parse_ok(index, NULL, &m);
	assert_int_equal(manifest_pick(&m, "amd64", "", "img", &d, &e), -1);
	assert_string_equal(e.msg, "no linux/amd64 image in img; it has windows/amd64");
	manifest_free(&m);
}

static void test_pick_on_an_image_refused(void **state)
{
	struct manifest m;
	const struct descriptor *d;
	struct err e = { 0 };

	(void)state;
	parse_ok(docker_v2, NULL, &m);
	assert_int_equal(manifest_pick(&m, "amd64", "", "img", &d, &e), -1);
	assert_non_null(strstr(e.msg, "not an index"));
	manifest_free(&m);
}

static void test_platform_from_machine(void **state)
{
	static const char *const cases[][3] = {
		{ "x86_64", "amd64", "" },  { "aarch64", "arm64", "v8" }, { "armv7l", "arm", "v7" },
		{ "armv6l", "arm", "v6" },  { "ppc64le", "ppc64le", "" }, { "s390x", "s390x", "" },
		{ "riscv64", "riscv64", "" }, { "i686", "386", "" },      { "mystery", "mystery", "" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		char arch[32], variant[32];

		platform_from_machine(cases[i][0], arch, sizeof(arch), variant, sizeof(variant));
		assert_string_equal(arch, cases[i][1]);
		assert_string_equal(variant, cases[i][2]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_docker_v2_manifest_layers_bottom_first),
		cmocka_unit_test(test_oci_manifest_zstd_and_tar_layers),
		cmocka_unit_test(test_content_type_parameters_and_case_ignored),
		cmocka_unit_test(test_generic_content_type_uses_body_media_type),
		cmocka_unit_test(test_oci_body_without_media_type_inferred_from_shape),
		cmocka_unit_test(test_schema1_refused_by_name),
		cmocka_unit_test(test_content_type_and_body_disagreeing_refused),
		cmocka_unit_test(test_artifact_config_is_not_a_container_image),
		cmocka_unit_test(test_foreign_layer_refused_by_name),
		cmocka_unit_test(test_unknown_layer_type_refused),
		cmocka_unit_test(test_digest_must_be_lowercase_sha256),
		cmocka_unit_test(test_size_negative_huge_or_not_integer_refused),
		cmocka_unit_test(test_too_many_layers_refused),
		cmocka_unit_test(test_body_read_by_length_not_nul),
		cmocka_unit_test(test_body_over_bound_refused),
		cmocka_unit_test(test_index_picks_arm64_v8),
		cmocka_unit_test(test_pick_prefers_exact_variant_over_none),
		cmocka_unit_test(test_pick_error_lists_platforms),
		cmocka_unit_test(test_pick_skips_other_os_and_non_manifests),
		cmocka_unit_test(test_pick_on_an_image_refused),
		cmocka_unit_test(test_platform_from_machine),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

// SPDX-License-Identifier: GPL-2.0
/* The scrape endpoint's address parsing (the server itself: test_backlog_metrics.py). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>

#include "unit.h"
#include "metrics_http.h"

TEST(metrics_http_parse_forms)
{
	struct sockaddr_storage sa;
	struct sockaddr_in *s4 = (struct sockaddr_in *)&sa;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&sa;
	unsigned int len;

	REQUIRE(metrics_http_parse("127.0.0.1:9464", &sa, &len) == 0);
	CHECK_INT(sa.ss_family, AF_INET);
	CHECK_INT(ntohs(s4->sin_port), 9464);
	CHECK(s4->sin_addr.s_addr == htonl(INADDR_LOOPBACK));
	CHECK_INT(len, sizeof(*s4));
	REQUIRE(metrics_http_parse(":1", &sa, &len) == 0);
	CHECK(s4->sin_addr.s_addr == htonl(INADDR_ANY));
	CHECK_INT(ntohs(s4->sin_port), 1);
	REQUIRE(metrics_http_parse("[::1]:65535", &sa, &len) == 0);
	CHECK_INT(sa.ss_family, AF_INET6);
	CHECK_INT(ntohs(s6->sin6_port), 65535);
	CHECK(IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr));
	CHECK_INT(len, sizeof(*s6));
}

TEST(metrics_http_parse_rejects)
{
	static const char *const bad[] = {
		"9464", "", ":", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:94x",
		"127.0.0.1:-1", "localhost:9464", "::1:9464", "[::1:9464", "[]:9464", "1.2.3:80",
		"[127.0.0.1]:80",
	};
	struct sockaddr_storage sa;
	unsigned int len, i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_INT(metrics_http_parse(bad[i], &sa, &len), -EINVAL);
}

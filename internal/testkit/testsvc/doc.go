// Package testsvc starts the real services that the object-storage and REST
// catalog tests need, on loopback and free ports, from any Go test:
//
//   - [Moto]: moto's S3 (and IAM, STS) server, from the moto[server] package
//     in the test venv (SLUICE_PYTHON), with helpers to create buckets,
//     IAM users with policies, roles and STS sessions, and to switch moto's
//     authentication on so that wrong or missing keys get a 403;
//   - [FakeGCS]: fake-gcs-server (its Go module's binary, SLUICE_FAKE_GCS),
//     GCS's JSON and XML APIs without authentication;
//   - [Azurite]: Azurite's blob service (the npm package, SLUICE_AZURITE)
//     with its development account devstoreaccount1 and shared key;
//   - [RESTCatalog]: Apache Iceberg's own RESTCatalogServer (the
//     iceberg-open-api test-fixtures jar from Maven Central, classpath
//     resolved by Maven into .tmp/) with a SQLite JDBC catalog and S3FileIO
//     on a moto bucket, behind a [Proxy] that counts requests per route and
//     can require OAuth2.
//
// Every process is stopped when the test that started it ends, and killed
// with the test binary (Pdeathsig) if that dies first. The shared variants
// ([SharedMoto], [SharedRESTCatalog]) start one process per test binary.
//
// RESTCatalogServer's version is Iceberg 1.11.0 (restcatalog/pom.xml; the
// newest whose test-fixtures jar Maven Central serves here), with Jetty
// 12.1 as that jar needs; it starts in about 2 s (C1 compiler only). It
// has no host setting and listens on every interface (on a free port);
// clients use the proxy, which listens on loopback only.
package testsvc

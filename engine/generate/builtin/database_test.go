package builtin

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kusionpr/kusionpr/engine/generate/module"
)

func credentialEnv(suffix, secret string) []corev1.EnvVar {
	env := func(name, key string) corev1.EnvVar {
		return corev1.EnvVar{Name: name + "_" + suffix, ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key},
		}}
	}
	return []corev1.EnvVar{env("KUSION_DB_HOST", "hostAddress"), env("KUSION_DB_USERNAME", "username"), env("KUSION_DB_PASSWORD", "password")}
}

func TestLocalMySQL(t *testing.T) {
	resp := generate(t, "mysql", request("", "_type: mysql.MySQL\ntype: Local\nversion: 8.0", "importedResources: {}", ""))
	equal(t, "ids", ids(resp.Resources), []string{
		"v1:Secret:proj:proj-dev-web-mysql-db-local-secret",
		"apps/v1:Deployment:proj:proj-dev-web-mysql-db-local-deployment",
		"v1:PersistentVolumeClaim:proj:proj-dev-web-mysql-db-local-pvc",
		"v1:Service:proj:proj-dev-web-mysql-db-local-service",
		"v1:Secret:proj:proj-dev-web-mysql-mysql",
	})
	// md5("projdevwebproj-dev-web-mysql")[:16], as Kusion derives it.
	const password = "32d6fa87dc973689"
	equal(t, "local secret", get(t, resp.Resources[0].Attributes, "stringData"), map[string]any{"password": password})
	accessory := map[string]any{"accessory": "proj-dev-web-mysql"}
	d := resp.Resources[1].Attributes
	equal(t, "deployment spec", get(t, d, "spec"), map[string]any{
		"selector": map[string]any{"matchLabels": accessory},
		"template": map[string]any{
			"metadata": map[string]any{"labels": accessory},
			"spec": map[string]any{
				"containers": []any{map[string]any{
					"name":  "proj-dev-web-mysql",
					"image": "mysql:8.0",
					"env": []any{map[string]any{"name": "MYSQL_ROOT_PASSWORD", "valueFrom": map[string]any{
						"secretKeyRef": map[string]any{"name": "proj-dev-web-mysql-db-local-secret", "key": "password"},
					}}},
					"ports":        []any{map[string]any{"name": "proj-dev-web-my", "containerPort": 3306}},
					"volumeMounts": []any{map[string]any{"name": "proj-dev-web-mysql", "mountPath": "/var/lib/mysql"}},
				}},
				"volumes": []any{map[string]any{
					"name":                  "proj-dev-web-mysql",
					"persistentVolumeClaim": map[string]any{"claimName": "proj-dev-web-mysql-db-local-pvc"},
				}},
			},
		},
	})
	equal(t, "pvc", resp.Resources[2].Attributes, map[string]any{
		"apiVersion": "v1",
		"kind":       "PersistentVolumeClaim",
		"metadata":   map[string]any{"name": "proj-dev-web-mysql-db-local-pvc", "namespace": "proj", "labels": accessory},
		"spec": map[string]any{
			"accessModes": []any{"ReadWriteOnce"},
			"resources":   map[string]any{"requests": map[string]any{"storage": "10Gi"}},
		},
	})
	equal(t, "service spec", get(t, resp.Resources[3].Attributes, "spec"), map[string]any{
		"clusterIP": "None",
		"ports":     []any{map[string]any{"port": 3306}},
		"selector":  accessory,
	})
	equal(t, "db secret", get(t, resp.Resources[4].Attributes, "stringData"), map[string]any{
		"hostAddress": "proj-dev-web-mysql-db-local-service",
		"username":    "root",
		"password":    password,
	})
	if resp.Patcher == nil {
		t.Fatal("no patcher")
	}
	equal(t, "patcher env", resp.Patcher.Environments, credentialEnv("PROJ_DEV_WEB_MYSQL", "proj-dev-web-mysql-mysql"))
}

func TestLocalDatabases(t *testing.T) {
	cases := []struct {
		name, module, dev, platform string
		project                     string
		check                       func(t *testing.T, resp *module.Response)
	}{
		{
			name: "mysql with its own user, name and size", module: "mysql",
			dev: "type: local\nversion: '5.7'", platform: "username: app\ndatabaseName: orders\nsize: 20",
			check: func(t *testing.T, resp *module.Response) {
				equal(t, "ids", ids(resp.Resources), []string{
					"v1:Secret:proj:orders-db-local-secret",
					"apps/v1:Deployment:proj:orders-db-local-deployment",
					"v1:PersistentVolumeClaim:proj:orders-db-local-pvc",
					"v1:Service:proj:orders-db-local-service",
					"v1:Secret:proj:orders-mysql",
				})
				c := get(t, resp.Resources[1].Attributes, "spec", "template", "spec", "containers", 0)
				equal(t, "image", get(t, c, "image"), "mysql:5.7")
				equal(t, "env", get(t, c, "env"), []any{
					map[string]any{"name": "MYSQL_USER", "value": "app"},
					map[string]any{"name": "MYSQL_PASSWORD", "valueFrom": map[string]any{
						"secretKeyRef": map[string]any{"name": "orders-db-local-secret", "key": "password"},
					}},
					map[string]any{"name": "MYSQL_RANDOM_ROOT_PASSWORD", "value": "yes"},
				})
				equal(t, "size", get(t, resp.Resources[2].Attributes, "spec", "resources", "requests", "storage"), "20Gi")
				equal(t, "username", get(t, resp.Resources[4].Attributes, "stringData", "username"), "app")
				equal(t, "env", resp.Patcher.Environments, credentialEnv("ORDERS", "orders-mysql"))
			},
		},
		{
			name: "postgres", module: "postgres",
			dev: "_type: postgres.PostgreSQL\ntype: local\nversion: '14.0'",
			check: func(t *testing.T, resp *module.Response) {
				equal(t, "ids", ids(resp.Resources), []string{
					"v1:Secret:proj:proj-dev-web-postgres-db-local-secret",
					"apps/v1:Deployment:proj:proj-dev-web-postgres-db-local-deployment",
					"v1:PersistentVolumeClaim:proj:proj-dev-web-postgres-db-local-pvc",
					"v1:Service:proj:proj-dev-web-postgres-db-local-service",
					"v1:Secret:proj:proj-dev-web-postgres-postgres",
				})
				const password = "8b07a6e49a9bcab5"
				equal(t, "local secret", get(t, resp.Resources[0].Attributes, "stringData"), map[string]any{
					"password": password, "username": "kusion_default", "database": "proj-dev-web-postgres",
				})
				c := get(t, resp.Resources[1].Attributes, "spec", "template", "spec", "containers", 0)
				ref := func(key string) map[string]any {
					return map[string]any{"secretKeyRef": map[string]any{"name": "proj-dev-web-postgres-db-local-secret", "key": key}}
				}
				equal(t, "env", get(t, c, "env"), []any{
					map[string]any{"name": "POSTGRES_USER", "valueFrom": ref("username")},
					map[string]any{"name": "POSTGRES_PASSWORD", "valueFrom": ref("password")},
					map[string]any{"name": "POSTGRES_DB", "valueFrom": ref("database")},
				})
				equal(t, "image", get(t, c, "image"), "postgres:14.0")
				equal(t, "port", get(t, c, "ports", 0, "containerPort"), 5432)
				equal(t, "mount", get(t, c, "volumeMounts", 0, "mountPath"), "/var/lib/postgresql/data")
				equal(t, "service port", get(t, resp.Resources[3].Attributes, "spec", "ports"), []any{map[string]any{"port": 5432}})
				equal(t, "db secret", get(t, resp.Resources[4].Attributes, "stringData"), map[string]any{
					"hostAddress": "proj-dev-web-postgres-db-local-service", "username": "kusion_default", "password": password,
				})
				equal(t, "env", resp.Patcher.Environments, credentialEnv("PROJ_DEV_WEB_POSTGRES", "proj-dev-web-postgres-postgres"))
			},
		},
		{
			name: "long names are cut to what Kubernetes takes", module: "mysql",
			dev: "type: local\nversion: '8'", project: strings.Repeat("p", 60) + "-x",
			check: func(t *testing.T, resp *module.Response) {
				c := get(t, resp.Resources[1].Attributes, "spec", "template", "spec", "containers", 0)
				name := get(t, c, "name").(string)
				// The database is named <project>-dev-web-mysql, 75 characters.
				equal(t, "container name", name, strings.Repeat("p", 60)+"-x")
				equal(t, "port name", get(t, c, "ports", 0, "name"), strings.Repeat("p", 15))
				equal(t, "selector", get(t, resp.Resources[1].Attributes, "spec", "selector", "matchLabels", "accessory"), name)
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := request("", c.dev, c.platform, "")
			if c.project != "" {
				req.Project = c.project
			}
			c.check(t, generate(t, c.module, req))
		})
	}
}

func TestAWSPostgres(t *testing.T) {
	resp := generate(t, "postgres", request("",
		"_type: postgres.PostgreSQL\ntype: cloud\nversion: '14.0'",
		"cloud: AWS\ninstanceType: db.t3.micro\nsize: 20",
		"AWS_REGION: us-east-1\nkubeconfig: /x"))
	const (
		random   = "hashicorp:random:random_password:proj-dev-web-postgres-postgres"
		sg       = "hashicorp:aws:aws_security_group:proj-dev-web-postgres-postgres"
		instance = "hashicorp:aws:aws_db_instance:proj-dev-web-postgres"
	)
	equal(t, "ids", ids(resp.Resources), []string{random, sg, instance, "v1:Secret:proj:proj-dev-web-postgres-postgres"})
	equal(t, "random", resp.Resources[0].Attributes, map[string]any{"length": 16, "special": true, "override_special": "_"})
	equal(t, "random extensions", resp.Resources[0].Extensions, map[string]any{
		"provider": "registry.terraform.io/hashicorp/random/3.6.0", "resourceType": "random_password",
	})
	aws := func(resourceType string) map[string]any {
		return map[string]any{
			"provider":     "registry.terraform.io/hashicorp/aws/5.0.1",
			"providerMeta": map[string]any{"region": "us-east-1"},
			"resourceType": resourceType,
		}
	}
	equal(t, "sg extensions", resp.Resources[1].Extensions, aws("aws_security_group"))
	rule := func(cidrs []any, protocol string, port int) map[string]any {
		return map[string]any{
			"cidr_blocks": cidrs, "description": "", "from_port": port, "to_port": port, "protocol": protocol,
			"ipv6_cidr_blocks": nil, "prefix_list_ids": nil, "security_groups": nil, "self": false,
		}
	}
	equal(t, "sg", resp.Resources[1].Attributes, map[string]any{
		"egress":  []any{rule([]any{"0.0.0.0/0"}, "-1", 0)},
		"ingress": []any{rule([]any{"0.0.0.0/0"}, "tcp", 5432)},
	})
	equal(t, "instance extensions", resp.Resources[2].Extensions, aws("aws_db_instance"))
	equal(t, "instance", resp.Resources[2].Attributes, map[string]any{
		"allocated_storage":      20,
		"engine":                 "postgres",
		"engine_version":         "14.0",
		"identifier":             "proj-dev-web-postgres",
		"instance_class":         "db.t3.micro",
		"password":               "$kusion_path.hashicorp:random:random_password:proj-dev-web-postgres-postgres.result",
		"publicly_accessible":    true,
		"skip_final_snapshot":    true,
		"username":               "kusion_default",
		"vpc_security_group_ids": []any{"$kusion_path.hashicorp:aws:aws_security_group:proj-dev-web-postgres-postgres.id"},
	})
	equal(t, "secret", get(t, resp.Resources[3].Attributes, "stringData"), map[string]any{
		"hostAddress": "$kusion_path.hashicorp:aws:aws_db_instance:proj-dev-web-postgres.address",
		"username":    "kusion_default",
		"password":    "$kusion_path.hashicorp:random:random_password:proj-dev-web-postgres-postgres.result",
	})
	equal(t, "env", resp.Patcher.Environments, credentialEnv("PROJ_DEV_WEB_POSTGRES", "proj-dev-web-postgres-postgres"))
}

func TestCloudDatabases(t *testing.T) {
	cases := []struct {
		name, module, platform, ctx string
		check                       func(t *testing.T, resp *module.Response)
	}{
		{
			name: "aws mysql in a private subnet, region from the platform", module: "mysql",
			platform: "cloud: aws\ninstanceType: db.t3.micro\nsubnetID: subnet-1\nsecurityIPs: [10.0.0.0/8, 192.168.1.1]\nregion: eu-west-1",
			ctx:      "AWS_REGION: us-east-1",
			check: func(t *testing.T, resp *module.Response) {
				a := resp.Resources[2].Attributes
				equal(t, "id", resp.Resources[2].ID, "hashicorp:aws:aws_db_instance:proj-dev-web-mysql")
				equal(t, "engine", a["engine"], "mysql")
				equal(t, "username", a["username"], "root")
				equal(t, "public", a["publicly_accessible"], false)
				equal(t, "subnet", a["db_subnet_group_name"], "subnet-1")
				equal(t, "region", resp.Resources[2].Extensions["providerMeta"], map[string]any{"region": "eu-west-1"})
				equal(t, "ingress", get(t, resp.Resources[1].Attributes, "ingress", 0, "cidr_blocks"), []any{"10.0.0.0/8", "192.168.1.1"})
				equal(t, "ingress port", get(t, resp.Resources[1].Attributes, "ingress", 0, "from_port"), 3306)
			},
		},
		{
			name: "alicloud mysql, public, routed publicly, serverless", module: "mysql",
			platform: "cloud: alicloud\ninstanceType: mysql.n2.serverless.1c\ncategory: serverless_basic\nprivateRouting: false\nsubnetID: vsw-1",
			ctx:      "ALICLOUD_REGION: cn-hangzhou",
			check: func(t *testing.T, resp *module.Response) {
				const (
					instance = "aliyun:alicloud:alicloud_db_instance:proj-dev-web-mysql"
					account  = "aliyun:alicloud:alicloud_rds_account:proj-dev-web-mysql"
					conn     = "aliyun:alicloud:alicloud_db_connection:proj-dev-web-mysql"
				)
				equal(t, "ids", ids(resp.Resources), []string{
					"hashicorp:random:random_password:proj-dev-web-mysql-mysql", instance, account, conn,
					"v1:Secret:proj:proj-dev-web-mysql-mysql",
				})
				equal(t, "extensions", resp.Resources[1].Extensions, map[string]any{
					"provider":     "registry.terraform.io/aliyun/alicloud/1.209.1",
					"providerMeta": map[string]any{"region": "cn-hangzhou"},
					"resourceType": "alicloud_db_instance",
				})
				equal(t, "instance", resp.Resources[1].Attributes, map[string]any{
					"category":                 "serverless_basic",
					"engine":                   "MySQL",
					"engine_version":           "8.0",
					"instance_storage":         10,
					"instance_type":            "mysql.n2.serverless.1c",
					"security_ips":             []any{"0.0.0.0/0"},
					"vswitch_id":               "vsw-1",
					"instance_name":            "proj-dev-web-mysql",
					"db_instance_storage_type": "cloud_essd",
					"instance_charge_type":     "Serverless",
					"serverless_config": []any{map[string]any{
						"auto_pause": false, "switch_force": false, "max_capacity": 8, "min_capacity": 1,
					}},
				})
				equal(t, "account", resp.Resources[2].Attributes, map[string]any{
					"account_name":     "root",
					"account_password": "$kusion_path.hashicorp:random:random_password:proj-dev-web-mysql-mysql.result",
					"account_type":     "Super",
					"db_instance_id":   "$kusion_path." + instance + ".id",
				})
				equal(t, "connection", resp.Resources[3].Attributes, map[string]any{
					"instance_id": "$kusion_path." + instance + ".id",
					"port":        3306,
				})
				equal(t, "connection dependsOn", resp.Resources[3].DependsOn, []string{account})
				equal(t, "host", get(t, resp.Resources[4].Attributes, "stringData", "hostAddress"), "$kusion_path."+conn+".connection_string")
			},
		},
		{
			name: "alicloud postgres, private addresses only", module: "postgres",
			platform: "cloud: alicloud\ninstanceType: pg.n2.small.1\nsecurityIPs: [172.16.0.0/12]\nprivateRouting: false",
			ctx:      "ALICLOUD_REGION: cn-beijing",
			check: func(t *testing.T, resp *module.Response) {
				instance := "aliyun:alicloud:alicloud_db_instance:proj-dev-web-postgres"
				equal(t, "ids", ids(resp.Resources), []string{
					"hashicorp:random:random_password:proj-dev-web-postgres-postgres",
					instance,
					"aliyun:alicloud:alicloud_rds_account:proj-dev-web-postgres",
					"v1:Secret:proj:proj-dev-web-postgres-postgres",
				})
				equal(t, "engine", resp.Resources[1].Attributes["engine"], "PostgreSQL")
				if _, ok := resp.Resources[1].Attributes["serverless_config"]; ok {
					t.Error("serverless config for a Basic instance")
				}
				// No public endpoint, so the app keeps the private one.
				equal(t, "host", get(t, resp.Resources[3].Attributes, "stringData", "hostAddress"), "$kusion_path."+instance+".connection_string")
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.check(t, generate(t, c.module, request("", "type: cloud\nversion: '8.0'", c.platform, c.ctx)))
		})
	}
}

func TestDatabaseErrors(t *testing.T) {
	dc, pc := module.DevConfig, module.PlatformConfig
	cases := []struct {
		name, module, dev, platform, ctx string
		want                             []wantErr
	}{
		{"nothing given", "mysql", "_type: mysql.MySQL", "", "",
			[]wantErr{{dc, "version", "required"}, {dc, "type", "required: want local or cloud"}}},
		{"unsupported type", "postgres", "type: remote\nversion: '14'", "", "",
			[]wantErr{{dc, "type", "unsupported type remote, want local or cloud"}}},
		{"cloud without cloud or instance type", "mysql", "type: cloud\nversion: '8'", "", "",
			[]wantErr{
				{pc, "cloud", "required for a cloud database: want aws or alicloud"},
				{pc, "instanceType", "required for a cloud database"},
			}},
		{"unsupported cloud", "mysql", "type: cloud\nversion: '8'", "cloud: gcp\ninstanceType: x", "",
			[]wantErr{{pc, "cloud", "unsupported cloud gcp, want aws or alicloud"}}},
		{"aws without a region", "postgres", "type: cloud\nversion: '14'", "cloud: aws\ninstanceType: x", "ALICLOUD_REGION: cn-hangzhou",
			[]wantErr{{pc, "region", "required for a cloud database: set it here or AWS_REGION in the workspace context"}}},
		{"alicloud without a region", "mysql", "type: cloud\nversion: '8'", "cloud: alicloud\ninstanceType: x", "",
			[]wantErr{{pc, "region", "required for a cloud database: set it here or ALICLOUD_REGION in the workspace context"}}},
		{"region in the context is not a string", "mysql", "type: cloud\nversion: '8'", "cloud: aws\ninstanceType: x", "AWS_REGION: [us-east-1]",
			[]wantErr{{module.Context, "AWS_REGION", "want a string, got a list"}}},
		{"bad security IPs and size", "mysql", "type: local\nversion: '8'", "securityIPs: [10.0.0.1, 10.0.0.300, 10.0.0.0/33]\nsize: 0", "",
			[]wantErr{
				{pc, "size", "must be a positive number of GiB"},
				{pc, "securityIPs[1]", "want an IP address or a CIDR block such as 10.0.0.0/8"},
				{pc, "securityIPs[2]", "want an IP address or a CIDR block such as 10.0.0.0/8"},
			}},
		{"unknown and mistyped fields", "postgres", "type: local\nversion: '14'\nsize: 1", "vpc: x\nprivateRouting: maybe", "",
			[]wantErr{
				{dc, "size", "unknown field (want one of _type, type, version)"},
				{pc, "vpc", "unknown field*"},
				{pc, "privateRouting", "want true or false, got a string"},
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkErrors(t, c.module, request("", c.dev, c.platform, c.ctx), c.want)
		})
	}
}

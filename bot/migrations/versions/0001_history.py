"""Regression history: repositories, pull requests, environments, results, benchmark points,
change points, accepts (issue 7). The App's own tables come in later revisions.

Revision ID: 0001_history
Revises: (none, the first revision)
Create Date: 2026-11-29 23:58:25.737247
"""

from __future__ import annotations

from alembic import op
import sqlalchemy as sa


revision = '0001_history'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('environments',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('key', sa.String(length=32), nullable=False),
    sa.Column('gpu', sa.String(length=200), nullable=True),
    sa.Column('driver', sa.String(length=100), nullable=True),
    sa.Column('cuda', sa.String(length=100), nullable=True),
    sa.Column('torch', sa.String(length=100), nullable=True),
    sa.Column('runner_label', sa.String(length=200), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_environments')),
    sa.UniqueConstraint('key', name=op.f('uq_environments_key'))
    )
    op.create_table('repositories',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('full_name', sa.String(length=200), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_repositories')),
    sa.UniqueConstraint('full_name', name=op.f('uq_repositories_full_name'))
    )
    op.create_table('accepts',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('repository_id', sa.Integer(), nullable=False),
    sa.Column('pr_number', sa.Integer(), nullable=True),
    sa.Column('sha', sa.String(length=64), nullable=True),
    sa.Column('benchmark', sa.String(length=500), nullable=True),
    sa.Column('user', sa.String(length=100), nullable=False),
    sa.Column('reason', sa.Text(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['repository_id'], ['repositories.id'], name=op.f('fk_accepts_repository_id_repositories'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_accepts'))
    )
    with op.batch_alter_table('accepts', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_accepts_repository_id'), ['repository_id'], unique=False)

    op.create_table('change_points',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('repository_id', sa.Integer(), nullable=False),
    sa.Column('environment_id', sa.Integer(), nullable=False),
    sa.Column('benchmark', sa.String(length=500), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('sha', sa.String(length=64), nullable=True),
    sa.Column('prev_sha', sa.String(length=64), nullable=True),
    sa.Column('measured_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('prev_measured_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('before', sa.Double(), nullable=False),
    sa.Column('after', sa.Double(), nullable=False),
    sa.Column('ratio', sa.Double(), nullable=False),
    sa.Column('p_value', sa.Double(), nullable=False),
    sa.Column('detected_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['environment_id'], ['environments.id'], name=op.f('fk_change_points_environment_id_environments')),
    sa.ForeignKeyConstraint(['repository_id'], ['repositories.id'], name=op.f('fk_change_points_repository_id_repositories'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_change_points'))
    )
    with op.batch_alter_table('change_points', schema=None) as batch_op:
        batch_op.create_index('ix_change_points_series', ['repository_id', 'benchmark', 'environment_id'], unique=False)

    op.create_table('pull_requests',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('repository_id', sa.Integer(), nullable=False),
    sa.Column('number', sa.Integer(), nullable=False),
    sa.Column('url', sa.String(length=500), nullable=True),
    sa.Column('title', sa.Text(), nullable=True),
    sa.Column('head_sha', sa.String(length=64), nullable=True),
    sa.Column('merge_sha', sa.String(length=64), nullable=True),
    sa.Column('merged_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['repository_id'], ['repositories.id'], name=op.f('fk_pull_requests_repository_id_repositories'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_pull_requests')),
    sa.UniqueConstraint('repository_id', 'number', name=op.f('uq_pull_requests_repository_id_number'))
    )
    with op.batch_alter_table('pull_requests', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_pull_requests_merge_sha'), ['merge_sha'], unique=False)
        batch_op.create_index(batch_op.f('ix_pull_requests_repository_id'), ['repository_id'], unique=False)

    op.create_table('results',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('repository_id', sa.Integer(), nullable=False),
    sa.Column('pull_request_id', sa.Integer(), nullable=True),
    sa.Column('environment_id', sa.Integer(), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('head_sha', sa.String(length=64), nullable=True),
    sa.Column('head_ref', sa.String(length=300), nullable=True),
    sa.Column('base_sha', sa.String(length=64), nullable=True),
    sa.Column('base_ref', sa.String(length=300), nullable=True),
    sa.Column('run_url', sa.String(length=500), nullable=True),
    sa.Column('measured_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('stored_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('content_sha256', sa.String(length=64), nullable=False),
    sa.Column('document', sa.JSON(), nullable=False),
    sa.ForeignKeyConstraint(['environment_id'], ['environments.id'], name=op.f('fk_results_environment_id_environments')),
    sa.ForeignKeyConstraint(['pull_request_id'], ['pull_requests.id'], name=op.f('fk_results_pull_request_id_pull_requests'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['repository_id'], ['repositories.id'], name=op.f('fk_results_repository_id_repositories'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_results')),
    sa.UniqueConstraint('repository_id', 'content_sha256', name=op.f('uq_results_repository_id_content_sha256'))
    )
    with op.batch_alter_table('results', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_results_pull_request_id'), ['pull_request_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_results_repository_id'), ['repository_id'], unique=False)

    op.create_table('benchmark_points',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('result_id', sa.Integer(), nullable=False),
    sa.Column('repository_id', sa.Integer(), nullable=False),
    sa.Column('environment_id', sa.Integer(), nullable=False),
    sa.Column('benchmark', sa.String(length=500), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('sha', sa.String(length=64), nullable=True),
    sa.Column('pr_number', sa.Integer(), nullable=True),
    sa.Column('measured_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('value', sa.Double(), nullable=False),
    sa.Column('ci_low', sa.Double(), nullable=True),
    sa.Column('ci_high', sa.Double(), nullable=True),
    sa.Column('ratio', sa.Double(), nullable=True),
    sa.Column('verdict', sa.String(length=16), nullable=True),
    sa.ForeignKeyConstraint(['environment_id'], ['environments.id'], name=op.f('fk_benchmark_points_environment_id_environments')),
    sa.ForeignKeyConstraint(['repository_id'], ['repositories.id'], name=op.f('fk_benchmark_points_repository_id_repositories'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['result_id'], ['results.id'], name=op.f('fk_benchmark_points_result_id_results'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_benchmark_points')),
    sa.UniqueConstraint('result_id', 'benchmark', name=op.f('uq_benchmark_points_result_id_benchmark'))
    )
    with op.batch_alter_table('benchmark_points', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_benchmark_points_result_id'), ['result_id'], unique=False)
        batch_op.create_index('ix_benchmark_points_series', ['repository_id', 'benchmark', 'environment_id', 'kind', 'measured_at'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('benchmark_points', schema=None) as batch_op:
        batch_op.drop_index('ix_benchmark_points_series')
        batch_op.drop_index(batch_op.f('ix_benchmark_points_result_id'))

    op.drop_table('benchmark_points')
    with op.batch_alter_table('results', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_results_repository_id'))
        batch_op.drop_index(batch_op.f('ix_results_pull_request_id'))

    op.drop_table('results')
    with op.batch_alter_table('pull_requests', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_pull_requests_repository_id'))
        batch_op.drop_index(batch_op.f('ix_pull_requests_merge_sha'))

    op.drop_table('pull_requests')
    with op.batch_alter_table('change_points', schema=None) as batch_op:
        batch_op.drop_index('ix_change_points_series')

    op.drop_table('change_points')
    with op.batch_alter_table('accepts', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_accepts_repository_id'))

    op.drop_table('accepts')
    op.drop_table('repositories')
    op.drop_table('environments')
